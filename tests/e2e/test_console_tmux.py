"""The real `ddtune` console in a real terminal (tmux) against the simulator: it starts the server,
shows the phases, applies a knob, verifies it, and stops the server when asked on quit."""

from __future__ import annotations

import json
import re
import time

import psutil

from tests.backends.lifecycle_support import write_config


def test_console_applies_window_and_stops_server_on_quit(open_console, tmp_path, state_dir):
    config = write_config(tmp_path, extra=("--sim-load-seconds", "1"))
    tmux = open_console("--config", str(config), width=120, height=40)
    screen = tmux.wait_for("SIMULATED", timeout=60)
    assert "ddtune" in screen
    screen = tmux.wait_for(re.compile(r"window\s+2048\s+2048\s+✓ verified"))
    pid = json.loads((state_dir / "server.json").read_text())["pid"]

    tmux.send_keys("k")
    tmux.wait_for("Edit knobs")
    tmux.type_text("x")  # the editor opens on the first knob, budget: a bad value is flagged as typed
    tmux.wait_for(re.compile(r"budget\s+x\s+set budget = 8"))
    tmux.send_keys("C-u")  # tmux can deliver C-u and the next text in one burst that drops letters:
    tmux.wait_for(re.compile(r"budget\s+set budget = 8"))  # so wait for the cleared field first
    tmux.type_text("none")
    tmux.wait_for("no changes")
    tmux.send_keys("Tab", "Tab")  # budget -> topk -> window; focusing a field selects its text
    tmux.type_text("1000")
    tmux.wait_for("1 change(s): window")
    tmux.send_keys("C-s")
    screen = tmux.wait_for(re.compile(r"window\s+1000\s+1000\s+✓ verified"))
    new_pid = json.loads((state_dir / "server.json").read_text())["pid"]
    assert new_pid != pid
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

    tmux.send_keys("q")
    tmux.wait_for("Leave it running")
    tmux.send_keys("s")
    assert tmux.wait_exit(timeout=60) == 0
    assert not (state_dir / "server.json").exists()
    assert not psutil.pid_exists(new_pid) or psutil.Process(new_pid).status() == psutil.STATUS_ZOMBIE


def test_apply_keeps_the_load_running_in_a_real_terminal(open_console, tmp_path, state_dir):
    """Load on, apply window=1024 from the editor: the load resumes by itself once the knob is
    verified, and no request is scored `error` because of the restart. The simulator's seeded wrong
    answers are off (a wrong two_sum returns None, which its test scores `error`)."""
    config = write_config(tmp_path, extra=("--sim-load-seconds", "1", "--sim-step-ms", "5", "--sim-wrong-rate", "0"))
    tmux = open_console("--config", str(config), "--load", "4", width=160, height=44)
    tmux.wait_for(re.compile(r"window\s+2048\s+2048\s+✓ verified"))
    screen = tmux.wait_for(re.compile(r"requests: \d+/([4-9]|\d\d+) pass"))
    assert "load: on (4 streams of coding)" in screen

    tmux.send_keys("k")
    tmux.wait_for("Edit knobs")
    for _ in range(2):  # budget -> topk -> window, one key per write (a burst can drop keys: issue 12)
        time.sleep(0.3)
        tmux.send_keys("Tab")
    time.sleep(0.3)
    tmux.type_text("1024")
    tmux.wait_for("1 change(s): window")
    tmux.send_keys("C-s")
    tmux.wait_for(re.compile(r"window\s+1024\s+1024\s+✓ verified"))
    total = int(re.search(r"requests: \d+/(\d+) pass", tmux.capture()).group(1))
    screen = tmux.wait_for(re.compile(r"requests: \d+/(\d+) pass"), timeout=5)

    def grown(text: str) -> bool:
        found = re.search(r"requests: \d+/(\d+) pass", text)
        return bool(found) and int(found.group(1)) >= total + 4

    deadline = time.monotonic() + 90
    while not grown(screen) and time.monotonic() < deadline:
        time.sleep(0.5)
        screen = tmux.capture()
    assert grown(screen), screen
    assert "load: on (4 streams of coding)" in screen
    assert not re.search(r"\berror\b", screen.split("requests:", 1)[1].split("log:", 1)[0]), screen

    tmux.send_keys("q")
    tmux.wait_for("Leave it running")
    tmux.send_keys("s")
    assert tmux.wait_exit(timeout=60) == 0
    runs = sorted((state_dir / "runs").glob("*-load"))
    knobs = [json.loads((r / "run.json").read_text())["server"]["knobs"].get("window") for r in runs]
    assert knobs == [2048, 1024]


def test_closing_the_terminal_keeps_the_console_load_as_a_run(open_console, tmp_path, state_dir, groups):
    """The terminal goes away mid-load (tmux killed, as an SSH drop would): the load worker sees its
    parent gone, stops, and the run under runs/ keeps every finished request, marked interrupted."""
    config = write_config(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-step-ms", "5"))
    tmux = open_console("--config", str(config), "--load", "4", width=160, height=44)
    tmux.wait_for(re.compile(r"requests: \d+/([4-9]|\d\d+) pass"))
    groups.track_state()
    def ours(p: psutil.Process) -> bool:  # this test's worker: it carries the test's private state dir
        try:
            return p.environ().get("DDTUNE_STATE_DIR") == str(state_dir)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False

    matching = [p for p in psutil.process_iter(["cmdline", "ppid"])
                if "workloads.live.worker" in " ".join(p.info["cmdline"] or []) and ours(p)]
    # A grader being spawned is, between fork and exec, a copy of the worker (same cmdline and
    # environ): count only the worker itself, whose parent is not a worker.
    pids = {p.pid for p in matching}
    workers = [p for p in matching if p.info["ppid"] not in pids]
    assert len(workers) == 1
    tmux._tmux("kill-server")
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, "the load worker outlived its console"
    [run] = sorted((state_dir / "runs").glob("*-load"))
    doc = json.loads((run / "run.json").read_text())
    assert doc["status"] == "interrupted" and doc["summary"]["finished"] >= 4
    assert len((run / "responses.jsonl").read_text().splitlines()) >= doc["summary"]["finished"]
