"""`ddtune eval` and the live coding load against the simulator."""

import asyncio
import json
import os
import signal
from pathlib import Path

from tests.helpers import run_ddtune
from tests.workloads.sim_args import FAST, INLINE, SEPARATED, SPEC
from workloads.client.stream import StreamingClient
from workloads.live.events import LoadStopped, RequestDone, StatsUpdated
from workloads.live.load import LoadEngine
from workloads.grading.problems import load_problems, select_problems

FIVE = ("is_palindrome", "fib", "merge_sorted", "word_count", "gcd")


def run_eval(url, *extra):
    out = run_ddtune("eval", "--url", url, "--problems", *FIVE, "--json", *extra, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_code_in_thinking_never_graded_separated_and_inline(start_sim, state_dir):
    # The simulator puts a wrong draft (and sometimes an unclosed block) inside <think>; with no
    # wrong final answers every problem must pass, whichever way the reasoning comes back.
    for args in (SEPARATED, INLINE):
        sim = start_sim(*args, "--sim-wrong-rate", "0")
        doc = run_eval(sim.url)
        assert doc["summary"]["pass"] == 5, (args, doc["results"])
        assert [r["problem"] for r in doc["results"]] == list(FIVE)
        responses = os.path.join(doc["run_dir"], "responses.jsonl")
        assert len(Path(responses).read_text().splitlines()) == 5


def test_wrong_final_answers_fail_and_regrade_agrees(start_sim, state_dir):
    sim = start_sim(*SEPARATED, "--sim-wrong-rate", "1")
    doc = run_eval(sim.url)
    assert doc["summary"]["fail"] + doc["summary"]["error"] == 5 and doc["summary"]["pass"] == 0
    again = run_ddtune("eval", "--regrade", os.path.join(doc["run_dir"], "responses.jsonl"), "--json")
    # responses.jsonl is in completion order; regrade keeps that order.
    key = lambda r: r["problem"]
    assert sorted(json.loads(again.stdout)["results"], key=key) == sorted(doc["results"], key=key)


def test_answers_cut_at_max_tokens_are_truncated(start_sim, state_dir):
    sim = start_sim(*SEPARATED)
    doc = run_eval(sim.url, "--max-tokens", "30")
    assert doc["summary"]["truncated"] == 5


def test_load_engine_publishes_windows_and_verdicts(start_sim):
    sim = start_sim(*SEPARATED, "--sim-step-ms", "1")
    problems = select_problems(load_problems(), list(FIVE))

    async def go():
        async with StreamingClient(sim.url, concurrency=4) as client:
            engine = LoadEngine.for_problems(client, problems, concurrency=4, max_tokens=1024, tick_s=0.2)
            events = []

            async def collect():
                async for event in engine.events():
                    events.append(event)
                    finished = [e for e in events if isinstance(e, RequestDone) and e.ok and e.verdict != "-"]
                    ticks = [e for e in events if isinstance(e, StatsUpdated)]
                    if len(finished) >= 6 and len(ticks) >= 3:
                        engine.stop()
            collector = asyncio.ensure_future(collect())
            await asyncio.sleep(0)
            stats = await asyncio.wait_for(engine.run(), 120)
            await asyncio.wait_for(collector, 30)
            return stats, events
    stats, events = asyncio.run(go())
    assert isinstance(events[-1], LoadStopped) and events[-1].reason == "stopped"
    graded = [e for e in events if isinstance(e, RequestDone) and e.ok and e.verdict != "-"]
    assert {e.verdict for e in graded} <= {"pass", "fail"}
    assert any(e.verdict == "pass" for e in graded)
    assert stats.finished >= 6 and stats.output_tokens > 0
    assert any(e.stats.window_roll.tokens_per_s > 0 for e in events if isinstance(e, StatsUpdated))
    assert any((e.stats.window_roll.acceptance or 0) > 1 for e in events if isinstance(e, StatsUpdated))


def test_load_stops_clearly_when_the_server_dies(start_sim):
    sim = start_sim(*SPEC, "--sim-step-ms", "5")
    problems = select_problems(load_problems(), ["fib"])

    async def go():
        async with StreamingClient(sim.url, concurrency=2) as client:
            engine = LoadEngine.for_problems(client, problems, concurrency=2, max_tokens=2000, tick_s=0.2)

            def on_event(event):
                if isinstance(event, RequestDone) and event.ok and sim.proc.poll() is None:
                    os.killpg(sim.pid, signal.SIGKILL)
            engine.add_listener(on_event)
            stopped = []
            engine.add_listener(lambda e: stopped.append(e) if isinstance(e, LoadStopped) else None)
            await asyncio.wait_for(engine.run(), 120)
            return stopped[-1]
    stop = asyncio.run(go())
    assert stop.reason == "server-unreachable" and "cannot connect" in stop.error
    assert stop.stats.finished >= 1


def test_load_cli_json_summary(start_sim, state_dir):
    sim = start_sim(*SPEC, *FAST)
    out = run_ddtune("load", "--url", sim.url, "--concurrency", "3", "--duration", "1.5", "--max-tokens", "600",
                     "--problems", "fib", "gcd", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["reason"] == "duration" and doc["finished"] > 0 and doc["errors"] == 0
    assert sum(doc["verdicts"].values()) == doc["finished"]
    lines = Path(doc["run_dir"], "responses.jsonl").read_text().splitlines()
    assert len(lines) >= doc["finished"]


def test_load_cli_stops_cleanly_on_sigint(start_sim, state_dir):
    import subprocess

    from tests.helpers import REPO, ddtune_cmd, ddtune_env

    sim = start_sim(*SPEC, "--sim-step-ms", "2")
    proc = subprocess.Popen(ddtune_cmd("load", "--url", sim.url, "--concurrency", "2", "--max-tokens", "400",
                                       "--problems", "fib"), env=ddtune_env(), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()  # the first per-second status line: the load is running
        assert "tok/s 1s" in line, line or proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, stderr
    assert "interrupted:" in stdout and "responses in" in stdout
