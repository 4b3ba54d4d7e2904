"""The live coding load in its own process (workloads/live/proc.py + load_worker.py), on the simulator."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from backends.launch.ownership import owned, stop_owned
from tests.helpers import REPO, ddtune_env
from tests.workloads.sim_args import SEPARATED, SPEC
from workloads.live.events import (DecodeRead, LoadPaused, LoadResumed, LoadStarted, LoadStats, LoadStopped,
                                   PauseLoad, RequestDone, ResumeLoad, Settings, StatsUpdated, StopLoad)
from workloads.live.proc import LoadProcess
from workloads.live.wire import decode_command, decode_event, decode_settings, encode
from workloads.live.windows import Window, WindowStats

FIVE = ["is_palindrome", "fib", "merge_sorted", "word_count", "gcd"]
GRADES = ("pass", "fail", "error", "timeout", "no_code", "truncated")


@pytest.fixture
def workers():
    """Every worker a test started (pid, create time) is stopped at teardown, by proof of ownership."""
    started: list[LoadProcess] = []
    yield started
    for load in started:
        if load.pid and load.create_time:
            stop_owned(owned(load.pid, load.pid, load.create_time, proof=False), term_timeout=1, kill_timeout=5)


def metrics(url: str) -> dict[str, float]:
    out = {}
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith("sglang:") and "{" in line and "_bucket" not in line:
            name = line.split("{")[0][len("sglang:"):]  # summed over label sets (is_streaming splits some)
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


async def until(events, done, limit_s=120.0):
    """Read events into the list until done(list) holds (a LoadStopped first is a failure)."""
    async def read():
        async for event in events:
            seen.append(event)
            assert not isinstance(event, LoadStopped), f"the load stopped early: {event}"
            if done(seen):
                return seen
    seen: list = []
    return await asyncio.wait_for(read(), limit_s)


def graded(events):
    return [e for e in events if isinstance(e, RequestDone) and e.ok and e.verdict in GRADES]


def after_resume(events):
    """The events after the (first) LoadResumed; none before it."""
    marks = [i for i, e in enumerate(events) if isinstance(e, LoadResumed)]
    return events[marks[0] + 1:] if marks else []


def test_stats_and_requests_cross_the_pipe_unchanged():
    stats = LoadStats(12.345678901234567, 32, 7, 101, 2, 54321, WindowStats(1.0, 1234.5678901234567, 3.1415926535, 4),
                      WindowStats(5.0, 987.654321, None, 40, approx=True), {"pass": 90, "fail": 11}, 3, True,
                      Window(7, 40.0, 5.0, 990.125, 3.25, 12, False, True))
    for event in (StatsUpdated(stats), LoadStopped("stopped", None, stats), LoadPaused(3, stats), LoadResumed(stats),
                  LoadStarted(4321, 32, ("fib", "gcd"), None, "mt_bench.jsonl"),
                  RequestDone("fib", True, 120, 180.25, 5.5, 0.04, 1.2, "fail", "test 2 of 4 failed")):
        assert decode_event(encode(event).encode()) == event
    for command in (PauseLoad("sweep"), ResumeLoad(), StopLoad("stopped"), DecodeRead(12.5, 3.25, 7)):
        assert decode_command(encode(command)) == command
    settings = Settings("http://127.0.0.1:1", "sk-x", 4, 64, ("fib",), 0.5, True, 2.5, "story")
    assert decode_settings(encode(settings).encode()) == settings


@pytest.mark.parametrize("line, why", [
    ({"event": "request", "problem": "fib", "ok": True}, "'tokens' is missing"),
    ({"event": "request", "problem": "fib", "ok": "yes", "tokens": 1, "tok_s": 0.0, "accept_len": None,
      "ttft_s": None, "e2e_s": None, "verdict": "-", "detail": None}, "'ok' must be true or false"),
    ({"event": "paused", "cancelled": 1, "stats": {"elapsed_s": 1.0}}, "'stats': 'concurrency' is missing"),
    ({"event": "resumed", "stats": None}, "'stats' must be LoadStats"),
    ({"event": "started", "pid": 1, "concurrency": 2, "problems": ["a", 3]}, r"'problems'\[1\] must be a string"),
    ({"event": "stopped", "reason": "x", "error": None, "stats": None, "extra": 1}, "unknown field"),
    ({"event": "exploded"}, "unknown event 'exploded'"),
    ({"cmd": "pause"}, "no 'event' tag"),
    ([1, 2], "not a JSON object"),
])
def test_a_wrong_record_from_the_other_process_is_refused_by_name(line, why):
    """The worker is another process: what it writes is checked field by field against the record's
    types, and a wrong one is a ValueError naming the field, never a half-built event."""
    with pytest.raises(ValueError, match=why):
        decode_event(json.dumps(line))


def test_a_wrong_command_is_refused_by_name():
    with pytest.raises(ValueError, match="'running_req' must be a whole number"):
        decode_command(json.dumps({"cmd": "decode", "t": 1.0, "accept_len": 2.0, "running_req": 1.5}))
    with pytest.raises(ValueError, match="unknown command 'explode'"):
        decode_command(json.dumps({"cmd": "explode"}))


def test_the_rolling_window_setting_is_checked():
    base = {"url": "http://127.0.0.1:1", "concurrency": 1, "max_tokens": 8}
    assert decode_settings(json.dumps(base).encode()).window_s == 5.0
    assert decode_settings(json.dumps({**base, "window_s": 2.5}).encode()).window_s == 2.5
    for bad in (0, -1, "5", True, 1e9):
        with pytest.raises(ValueError, match="'window_s' must be a number"):
            decode_settings(json.dumps({**base, "window_s": bad}).encode())


def test_events_flow_and_agree_with_the_server(start_sim, workers):
    sim = start_sim(*SEPARATED, "--sim-step-ms", "2", "--enable-metrics")
    before = metrics(sim.url)

    async def go():
        load = LoadProcess(tick_s=0.2)
        workers.append(load)
        await load.start(sim.url, None, concurrency=4, max_tokens=800, problems=FIVE)
        events = load.events()
        seen = await until(events, lambda s: len(graded(s)) >= 8 and sum(isinstance(e, StatsUpdated) for e in s) >= 3)
        load.pause()  # nothing left in flight: every request sent is accounted for below
        seen += await until(events, lambda s: isinstance(s[-1], LoadPaused))
        at_pause = metrics(sim.url)
        await load.stop("stopped")
        async for event in events:
            seen.append(event)
        return load, seen, at_pause

    load, seen, at_pause = asyncio.run(go())
    assert isinstance(seen[0], LoadStarted) and seen[0].pid == load.pid and seen[0].problems == tuple(FIVE)
    stop = seen[-1]
    assert isinstance(stop, LoadStopped) and stop.reason == "stopped" and stop.error is None
    final = stop.stats
    done = [e for e in seen if isinstance(e, RequestDone)]
    # every request the engine counted came out as an event, graded when it finished
    assert final.finished == len([e for e in done if e.ok]) == sum(final.verdicts.values())
    assert final.errors == len([e for e in done if not e.ok and e.verdict == "error"]) == 0
    assert final.cancelled == len([e for e in done if e.verdict == "cancelled"])
    assert final.output_tokens == sum(e.tokens for e in done)
    assert {e.verdict for e in done if e.ok} <= {"pass", "fail"} and any(e.verdict == "pass" for e in done)
    ticks = [e.stats for e in seen if isinstance(e, StatsUpdated)]
    assert any(s.window_1s.tokens_per_s > 0 for s in ticks)
    assert any((s.window_roll.acceptance or 0) > 1 for s in ticks)
    # ... and with what the server counted: requests it received, tokens it generated
    received = at_pause["num_requests_total"] - before["num_requests_total"]
    assert final.finished + final.errors <= received <= final.finished + final.errors + final.cancelled
    assert at_pause["generation_tokens_total"] - before["generation_tokens_total"] >= final.output_tokens
    assert load.running is False


def test_pause_cancels_in_flight_and_resume_continues(start_sim, workers):
    sim = start_sim(*SPEC, "--sim-step-ms", "5", "--enable-metrics")

    async def go():
        load = LoadProcess(tick_s=0.2)
        workers.append(load)
        await load.start(sim.url, None, concurrency=3, max_tokens=1500, problems=["fib", "gcd"])
        events = load.events()
        first = await until(events, lambda s: len(graded(s)) >= 2 and isinstance(s[-1], StatsUpdated)
                            and s[-1].stats.in_flight == 3)
        load.pause()
        paused = await until(events, lambda s: isinstance(s[-1], LoadPaused))
        for _ in range(300):  # the server notices the closed streams and aborts them
            if metrics(sim.url)["num_running_reqs"] == 0:
                break
            await asyncio.sleep(0.1)
        quiet = [metrics(sim.url)]
        await until(events, lambda s: sum(isinstance(e, StatsUpdated) for e in s) >= 3)  # paused for a while
        quiet.append(metrics(sim.url))
        load.resume()
        # events sent before the resume reached the pipe first: ticks of the paused load, and grades of
        # answers that were in before the pause (grading goes on while paused); then LoadResumed
        resumed = await until(events, lambda s: len(graded(after_resume(s))) >= 2)
        await load.stop("stopped")
        rest = [event async for event in events]
        return first, paused, quiet, resumed, rest

    first, paused, quiet, resumed, rest = asyncio.run(go())
    cancelled = [e for e in paused if isinstance(e, RequestDone) and e.verdict == "cancelled"]
    mark = paused[-1]
    assert mark.cancelled == len(cancelled) >= 1
    assert mark.stats.in_flight == 0 and mark.stats.paused and mark.stats.cancelled == len(cancelled)
    assert mark.stats.errors == 0 and all(not e.ok and e.detail.startswith("cancelled") for e in cancelled)
    # while paused the server has nothing running and gets nothing new
    assert quiet[1]["num_running_reqs"] == 0 and quiet[1]["num_requests_total"] == quiet[0]["num_requests_total"]
    marks = [i for i, e in enumerate(resumed) if isinstance(e, LoadResumed)]
    assert len(marks) == 1 and not resumed[marks[0]].stats.paused
    # before it only what the paused load still said: paused ticks and late grades, no new request
    late = resumed[:marks[0]]
    assert all(isinstance(e, StatsUpdated) and e.stats.paused or isinstance(e, RequestDone) and e.ok
               and e.verdict in GRADES for e in late), late
    assert len(graded(after_resume(resumed))) >= 2  # the load continues: new requests graded after it
    everything = first + paused + resumed + rest
    assert not any(isinstance(e, RequestDone) and e.verdict == "error" for e in everything)
    assert isinstance(rest[-1], LoadStopped) and rest[-1].reason == "stopped"
    assert rest[-1].stats.finished > mark.stats.finished


def snapshot_tree(pid: int, into: dict[int, float]) -> None:
    try:
        for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
            try:
                into[proc.pid] = proc.create_time()
            except psutil.NoSuchProcess:
                pass
    except psutil.NoSuchProcess:
        pass


def alive(pids: dict[int, float]) -> list[int]:
    left = []
    for pid, created in pids.items():
        try:
            proc = psutil.Process(pid)
            if abs(proc.create_time() - created) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    return left


def in_session(sid: int) -> list[int]:
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid or os.getpgid(proc.pid) == sid:
                found.append(proc.pid)
        except (ProcessLookupError, PermissionError):
            pass
    return found


@pytest.mark.parametrize("grace_s", [5.0, 0.0], ids=["asked", "signalled"])
def test_stop_leaves_no_worker_and_no_grader(start_sim, workers, grace_s):
    sim = start_sim(*SEPARATED, "--sim-step-ms", "1")
    tree: dict[int, float] = {}

    async def go():
        load = LoadProcess(tick_s=0.2)
        workers.append(load)
        await load.start(sim.url, None, concurrency=6, max_tokens=600, problems=FIVE)

        async def watch():  # note every process the worker starts: the graders among them
            while True:
                snapshot_tree(load.pid, tree)
                await asyncio.sleep(0.005)
        watcher = asyncio.ensure_future(watch())
        events = load.events()
        await until(events, lambda s: len(graded(s)) >= 6)
        snapshot_tree(load.pid, tree)
        report = await load.stop("stopped", grace_s=grace_s)
        watcher.cancel()
        rest = [event async for event in events]
        return load, report, rest

    load, report, rest = asyncio.run(go())
    assert len(tree) > 1, "no grader process was ever seen under the worker"
    assert alive(tree) == [] and in_session(load.pid) == []
    assert isinstance(rest[-1], LoadStopped)
    if grace_s == 0.0:  # no time to finish: the group was signalled, and only what was proven ours
        assert report is not None and load.pid in report.stopped and report.left == ()


PARENT = """
import asyncio, sys
from workloads.live.proc import LoadProcess
async def main():
    load = LoadProcess(tick_s=0.2)
    await load.start(sys.argv[1], None, concurrency=3, max_tokens=600, problems=["fib"])
    print(load.pid, load.create_time, flush=True)
    async for event in load.events():
        if type(event).__name__ == "RequestDone":
            print("request", flush=True)
asyncio.run(main())
"""


def test_worker_exits_when_its_parent_dies(start_sim):
    sim = start_sim(*SPEC, "--sim-step-ms", "2")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, sim.url], stdout=subprocess.PIPE, text=True,
                              env=ddtune_env(), cwd=REPO, start_new_session=True)
    pid = created = None
    try:
        pid_text, created_text = parent.stdout.readline().split()
        pid, created = int(pid_text), float(created_text)
        assert parent.stdout.readline().strip() == "request"  # the load runs
        os.killpg(parent.pid, signal.SIGKILL)  # the parent's group only: the worker leads its own
        parent.wait(timeout=30)
        worker = psutil.Process(pid)
        assert abs(worker.create_time() - created) < 0.05
        worker.wait(timeout=60)  # raises TimeoutExpired if the worker outlives its parent
        assert in_session(pid) == []
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait(timeout=30)
        parent.stdout.close()
        if pid is not None:  # should the worker have outlived the test: only what is proven ours
            stop_owned(owned(pid, pid, created, proof=False), term_timeout=1, kill_timeout=5)


def test_api_key_reaches_the_server_but_not_argv_or_environ(start_sim, workers, monkeypatch):
    key = "load-worker-secret-7f3a"
    monkeypatch.setenv("DDTUNE_API_KEY", key)
    monkeypatch.setenv("SOME_OTHER_VAR", f"prefix-{key}")
    sim = start_sim(*SPEC, "--sim-step-ms", "2", "--api-key", key)

    async def go():
        load = LoadProcess(tick_s=0.2)
        workers.append(load)
        await load.start(sim.url, key, concurrency=2, max_tokens=400, problems=["fib"])
        seen = await until(load.events(), lambda s: len(graded(s)) >= 1)
        # read once the worker is at work: right after the spawn its exec may not have set up its
        # new stack yet, and /proc then shows an empty cmdline and environ (CI saw that once)
        cmdline = Path(f"/proc/{load.pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{load.pid}/environ").read_bytes()
        await load.stop()
        return cmdline, environ, seen

    cmdline, environ, seen = asyncio.run(go())
    assert b"workloads.live.worker" in cmdline and b"PATH=" in environ
    assert key.encode() not in cmdline and key.encode() not in environ
    assert graded(seen)[0].verdict in ("pass", "fail")  # authenticated: the key travelled over stdin


def test_bad_settings_stop_the_worker_with_a_reason(workers):
    async def go():
        load = LoadProcess()
        workers.append(load)
        await load.start("http://127.0.0.1:9", None, concurrency=2, max_tokens=100, problems=["no_such_problem"])
        seen = [event async for event in load.events()]
        code = await load.wait()
        return seen, code

    seen, code = asyncio.run(go())
    assert len(seen) == 1 and seen[0].reason == "bad-settings" and "no_such_problem" in seen[0].error
    assert code == 2


@pytest.mark.parametrize("spec", [True, False], ids=["speculative", "plain"])
def test_live_acceptance_only_from_a_speculative_server(start_sim, workers, spec):
    """The live load asks /server_info first: a plain server's requests carry no acceptance, and
    the windows say None (not 1.0); a speculative one's carry the server's figure."""
    sim = start_sim(*(SPEC if spec else ()), "--sim-step-ms", "2")

    async def go():
        load = LoadProcess(tick_s=0.2)
        workers.append(load)
        await load.start(sim.url, None, concurrency=2, max_tokens=200, problems=FIVE)
        seen = await until(load.events(), lambda s: len([e for e in s if isinstance(e, RequestDone) and e.ok]) >= 3)
        await load.stop("stopped")
        return seen

    seen = asyncio.run(go())
    accepts = [e.accept_len for e in seen if isinstance(e, RequestDone) and e.ok]
    if spec:
        assert all(a is not None and a > 1.0 for a in accepts), accepts
    else:
        assert accepts == [None] * len(accepts)
        windows = [e.stats.window_roll.acceptance for e in seen if isinstance(e, StatsUpdated)]
        assert windows and all(w is None for w in windows), windows


def test_decode_lines_the_parent_reads_give_the_windows_acceptance_without_metrics(start_sim, workers):
    """0.5.17 without --enable-metrics: chat has no spec field and /metrics no counters; the console's
    session hands the worker its decode lines (played here by reading the log by offset), labelled log."""
    from backends.logs.span import decode_since, log_end

    sim = start_sim(*SPEC, "--sim-version", "0.5.17", "--sim-step-ms", "2", "--decode-log-interval", "4")

    async def main():
        load = LoadProcess(tick_s=0.2, window_s=1.0)
        workers.append(load)
        offset = log_end(sim.log)
        await load.start(sim.url, None, concurrency=4, max_tokens=256, problems=FIVE)
        events = load.events()

        def fed(seen):
            nonlocal offset
            lines, offset = decode_since(sim.log, offset)
            for e in lines:
                load.decode(time.monotonic(), e.accept_len, e.running_req)
            last = seen[-1]
            return isinstance(last, StatsUpdated) and last.stats.window_roll.acceptance_source == "log"

        seen = await until(events, fed, 30)
        await load.stop("stopped")
        return seen[-1].stats

    stats = asyncio.run(main())
    assert stats.window_roll.acceptance > 1.5 and stats.accept_source == "log"


def test_the_worker_started_from_a_folder_of_decoys_runs_ddtune_s(start_sim, workers, tmp_path, monkeypatch):
    # `python -m workloads.live.worker` would put the working directory first on sys.path: the worker
    # runs where the user is (no cwd of ddtune's), with no PYTHONPATH added, and still imports ddtune
    sim = start_sim(*SPEC, "--sim-step-ms", "2")
    cwd = tmp_path / "work"
    for name in ("backends", "workloads", "tui", "presets"):
        (cwd / name).mkdir(parents=True)
        (cwd / name / "__init__.py").write_text(f"open({str(cwd / 'decoy-ran')!r}, 'w').close()\nraise SystemExit(3)\n")
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the editable install alone finds ddtune

    async def go():
        load = LoadProcess(tick_s=0.2)
        workers.append(load)
        await load.start(sim.url, None, concurrency=1, max_tokens=300, problems=["fib"])
        seen = await until(load.events(), lambda s: len(graded(s)) >= 1)
        where = os.readlink(f"/proc/{load.pid}/cwd")
        environ = Path(f"/proc/{load.pid}/environ").read_bytes().split(b"\0")  # once at work (see above)
        await load.stop()
        return where, environ, seen

    where, environ, seen = asyncio.run(go())
    assert any(e.startswith(b"PATH=") for e in environ)  # read in full, not caught mid-exec
    assert where == str(cwd) and not [e for e in environ if e.startswith(b"PYTHONPATH=")]
    assert isinstance(seen[0], LoadStarted) and graded(seen)[0].verdict in ("pass", "fail")
    assert not (cwd / "decoy-ran").exists()
