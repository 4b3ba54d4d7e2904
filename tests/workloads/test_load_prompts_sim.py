"""The live load runs any prompt source: the console's load worker and `ddtune load` send a file's
records as written (judged at the server), feed the live reply back on multi-turn records, leave
non-coding answers ungraded, and name the source in their events and runs."""

import asyncio
import json

from backends.launch.ownership import owned, stop_owned
from tests.helpers import run_ddtune
from tests.workloads.sim_args import FAST, SPEC
from workloads.live.events import LoadStarted, LoadStopped, RequestDone
from workloads.live.proc import LoadProcess

RECORDS = [
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a planet."}]},
    {"question_id": 7, "category": "writing", "turns": ["Write a haiku about fog.", "Now one about rain."]},
    {"prompt": "Define latency."},
]


def _file(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return str(path)


def _received(log):
    return [json.loads(line)["messages"] for line in log.read_text().splitlines()
            if json.loads(line)["route"] == "/v1/chat/completions"]


def test_the_console_load_worker_sends_a_files_records(start_sim, tmp_path, state_dir):
    log = tmp_path / "received.jsonl"
    sim = start_sim(*SPEC, *FAST, "--sim-request-log", str(log))
    source = _file(tmp_path)

    async def go():
        load = LoadProcess(tick_s=0.2)
        try:
            await load.start(sim.url, None, concurrency=2, max_tokens=48, record=True, prompts=source)
            seen = []
            async for event in load.events():
                seen.append(event)
                assert not isinstance(event, LoadStopped), event
                if sum(isinstance(e, RequestDone) for e in seen) >= 8:
                    break
            await load.stop("stopped")
            return seen
        finally:
            if load.pid and load.create_time and load.running:
                stop_owned(owned(load.pid, load.pid, load.create_time, proof=False), term_timeout=1, kill_timeout=5)

    seen = asyncio.run(go())
    started = seen[0]
    assert isinstance(started, LoadStarted) and started.prompts == source
    assert started.problems == ("mine.jsonl:1", "7", "mine.jsonl:3")
    done = [e for e in seen if isinstance(e, RequestDone)]
    assert {e.problem for e in done} <= {"mine.jsonl:1", "7", "mine.jsonl:3"}
    assert all(e.verdict == "-" for e in done if e.ok)  # not coding problems: nothing to grade
    sent = _received(log)
    assert RECORDS[0]["messages"] in sent and [{"role": "user", "content": "Define latency."}] in sent
    followed = [m for m in sent if len(m) == 3 and m[0]["content"] == "Write a haiku about fog."]
    assert followed and followed[0][1]["role"] == "assistant" and followed[0][1]["content"]
    assert followed[0][2] == {"role": "user", "content": "Now one about rain."}
    runs = sorted((state_dir / "runs").glob("*-load"))
    run = json.loads((runs[-1] / "run.json").read_text())
    assert run["plan"]["prompts"] == source and run["prompt_sets"][0]["records"] == 3


def test_ddtune_load_takes_prompts(start_sim, tmp_path, state_dir):
    sim = start_sim(*SPEC, *FAST)
    out = run_ddtune("load", "--url", sim.url, "--concurrency", "2", "--duration", "1.5", "--max-tokens", "32",
                     "--prompts", "humaneval", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["prompts"] == "humaneval" and summary["finished"] > 0 and summary["verdicts"] == {}
    shown = run_ddtune("load", "--url", sim.url, "--concurrency", "2", "--duration", "1.5", "--max-tokens", "16",
                       "--prompts", "story", "--show-requests", timeout=120)
    answered = [line.split() for line in shown.stdout.splitlines() if line.startswith("  ")]
    assert shown.returncode == 0 and answered, shown.stdout + shown.stderr
    assert all(words[1] == "-" for words in answered), shown.stdout  # ungraded, not "request error: None"
    bad = run_ddtune("load", "--url", sim.url, "--concurrency", "2", "--prompts", str(tmp_path / "none.jsonl"))
    assert bad.returncode == 2 and "--prompts" in bad.stderr and "no such file" in bad.stderr
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"id": "ok", "prompt": "Say hi."}\nnot json\n')
    told = run_ddtune("load", "--url", sim.url, "--concurrency", "1", "--duration", "1", "--max-tokens", "8",
                      "--prompts", str(mixed), "--json", timeout=120)
    assert told.returncode == 0, told.stderr
    said = [line for line in told.stderr.splitlines() if line.startswith("prompts: ")]
    assert said[0].endswith("record skipped") and "line 2: not JSON" in said[0], told.stderr
    assert said[1] == f"prompts: {mixed}: 1 read, 1 skipped", told.stderr
