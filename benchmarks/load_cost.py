"""What the live coding load costs, split by process: the UI process, the load worker, the graders.

    python benchmarks/load_cost.py                              # 32 streams, every mode, 5 s + 30 s each
    python benchmarks/load_cost.py --modes worker --duration 60
    python benchmarks/load_cost.py --modes console              # the real console: ddtune --load 32, 200x50 pty

One simulator (the console's default config: DFLASH, window 2048) is started with ``ddtune up`` in
a private state dir and stopped with ``ddtune down`` at the end. Each mode keeps C coding prompts in
flight for --settle + --duration seconds and measures CPU over the last --duration, as % of one core:

- ``inprocess``: this script runs the LoadEngine itself, as the console's controller did before the
  load moved out: "UI process" is this script (client, windows, grading threads), "graders" its
  reaped sandbox processes;
- ``worker``: this script drives a LoadProcess and turns each event into the row the console
  shows, standing in for the UI process; "load worker" is ``python -m workloads.live.worker``,
  "graders" its sandbox processes;
- ``console``: ``ddtune --load C`` on a COLSxROWS pty (benchmarks/console_cost.py's PtyProgram):
  "UI process" is the console itself, "load worker" its worker process when it has one, "graders"
  every other child (reaped or live).

The simulator's own CPU is shown apart and is not in "together". Figures only; nothing is asserted.
Issue 23's targets under 32 streams: UI <= 5% of a core, all together <= 20% (issue 11's were 7% and
25%); measured beside nvitop on the H200 box, since a shared VM inflates every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.console_cost import PtyProgram, ProgramEnded  # noqa: E402
from tests.helpers import free_port  # noqa: E402

MODES = ("inprocess", "worker", "console")
WORKER_MARK = "workloads.live.worker"
SUBJECT_MARK = "--subject"
# Every measured program runs under this shim, a child subreaper: a grader's sandbox leaves a process
# that its parent does not reap (bwrap is killed before it reaps the namespace's pid 1), so without
# the shim that CPU would go to init and be missed. Orphans come here, are reaped, and are counted.
SHIM = """
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)  # the program decides when it is done; we reap until then
code = 0
while True:
    try:
        done, status = os.wait()
    except ChildProcessError:
        break
    if done == pid:
        code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass
class Usage:
    """CPU seconds by role at one instant (live processes plus what their parents reaped)."""

    at: float
    ui: float = 0.0
    worker: float = 0.0
    graders: float = 0.0
    has_worker: bool = False


@dataclass
class Result:
    mode: str
    seconds: float
    ui: float
    worker: float | None
    graders: float
    server: float
    rates: list[float] = field(default_factory=list)   # tok/s, 1 s window, per tick
    acceptance: float | None = None
    finished: int | None = None

    @property
    def together(self) -> float:
        return self.ui + (self.worker or 0.0) + self.graders


def _own(proc: psutil.Process) -> tuple[float, float]:
    """(own CPU s, CPU s of the children it reaped)."""
    t = proc.cpu_times()
    return t.user + t.system, t.children_user + t.children_system


def usage(shim: psutil.Process) -> Usage:
    """The shim's tree by role: the UI (its first child: the console or the --subject script), the
    load worker, and everything else (graders), reaped ones included."""
    out = Usage(time.monotonic())
    _, out.graders = _own(shim)  # orphans it reaped
    for proc in shim.children(recursive=True):
        try:
            own, reaped = _own(proc)
            line = " ".join(proc.cmdline())
            if proc.ppid() == shim.pid and (SUBJECT_MARK in line or "tui.cli" in line):
                out.ui += own
                out.graders += reaped
            elif WORKER_MARK in line:
                out.worker += own
                out.graders += reaped
                out.has_worker = True
            else:
                out.graders += own + reaped
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return out


def server_cpu(server: psutil.Process) -> float:
    own, reaped = _own(server)
    return own + reaped + sum(sum(_own(p)) for p in server.children(recursive=True))


def result(mode: str, first: Usage, last: Usage, server: tuple[float, float]) -> Result:
    wall = last.at - first.at
    pct = lambda a, b: 100 * (b - a) / wall  # noqa: E731
    return Result(mode, wall, pct(first.ui, last.ui), pct(first.worker, last.worker) if last.has_worker else None,
                  pct(first.graders, last.graders), pct(*server))


# ---- the measured programs --------------------------------------------------------------------------
def subject(mode: str, url: str, concurrency: int, max_tokens: int) -> int:
    """The stand-in UI process: runs the load (in process, or through a LoadProcess) until SIGTERM,
    printing each stats tick as a JSON line."""
    import json
    import signal

    def tick(stats) -> None:
        print(json.dumps({"t": time.monotonic(), "tok_s": stats.window_1s.tokens_per_s,
                          "accept": stats.window_roll.acceptance, "finished": stats.finished}), flush=True)

    async def inprocess() -> None:
        from workloads.client.stream import StreamingClient
        from workloads.live.events import StatsUpdated
        from workloads.live.load import LoadEngine
        from workloads.grading.problems import load_problems

        async with StreamingClient(url, concurrency=concurrency) as client:
            engine = LoadEngine.for_problems(client, load_problems(), concurrency=concurrency, max_tokens=max_tokens,
                                             on_event=lambda e: tick(e.stats) if isinstance(e, StatsUpdated) else None)
            asyncio.get_running_loop().add_signal_handler(
                signal.SIGTERM, lambda: engine.stop("stopped", drop_grading=True))
            await engine.run()

    async def worker() -> None:
        from workloads.live.events import RequestDone, StatsUpdated
        from workloads.live.proc import LoadProcess

        load = LoadProcess()
        await load.start(url, None, concurrency, max_tokens)
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGTERM, lambda: asyncio.ensure_future(load.stop("stopped", grace_s=1.0)))
        rows = []
        async for event in load.events():  # what the console's controller does: one message per event
            if isinstance(event, StatsUpdated):
                tick(event.stats)
            elif isinstance(event, RequestDone):
                rows.append(event.row())
        await load.wait()

    asyncio.run(inprocess() if mode == "inprocess" else worker())
    return 0


def run_subject(mode: str, url: str, server: psutil.Process, args) -> Result:
    import json
    import threading

    argv = [sys.executable, "-c", SHIM, sys.executable, str(Path(__file__).resolve()), SUBJECT_MARK, mode, url,
            str(args.concurrency), str(args.max_tokens)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True)
    ticks: list[dict] = []
    reader = threading.Thread(target=lambda: ticks.extend(json.loads(line) for line in proc.stdout or ()), daemon=True)
    reader.start()
    shim = psutil.Process(proc.pid)
    try:
        time.sleep(args.settle)
        first, server_first = usage(shim), server_cpu(server)
        time.sleep(args.duration)
        last, server_last = usage(shim), server_cpu(server)
        for child in shim.children():
            if SUBJECT_MARK in " ".join(child.cmdline()):
                child.terminate()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        reader.join(10)
    out = result(mode, first, last, (server_first, server_last))
    window = [t for t in ticks if first.at <= t["t"] <= last.at]
    out.rates = [t["tok_s"] for t in window]
    if window:
        before = [t for t in ticks if t["t"] < first.at]
        out.acceptance = window[-1]["accept"]
        out.finished = window[-1]["finished"] - (before[-1]["finished"] if before else 0)
    return out


def run_console(cfg: Path, env: dict[str, str], server: psutil.Process, args) -> Result:
    cols, rows = args.size
    argv = [sys.executable, "-c", SHIM, sys.executable, "-m", "tui.cli", "--config", str(cfg),
            "--load", str(args.concurrency)]
    term = {**env, "TERM": "xterm-256color", "COLORTERM": "truecolor", "LANG": "C.UTF-8"}
    program = PtyProgram(argv, cols, rows, term, str(REPO))
    try:
        program.drain(args.settle)
        first, server_first = usage(program.root), server_cpu(server)
        program.drain(args.duration)
        last, server_last = usage(program.root), server_cpu(server)
    finally:
        program.stop()
    return result("console", first, last, (server_first, server_last))


def table(results: list[Result], args) -> str:
    lines = [f"load cost: {args.concurrency} streams, max_tokens {args.max_tokens}, simulator (DFLASH, window 2048), "
             f"settle {args.settle:g} s, measured {args.duration:g} s; % of one core",
             "",
             f"  {'mode':10} {'UI process':>10} {'load worker':>11} {'graders':>8} {'together':>9} "
             f"{'(server)':>9} {'tok/s 1s':>9} {'accept 5s':>10} {'finished':>8}"]
    for r in results:
        rate = sum(r.rates) / len(r.rates) if r.rates else None
        worker = "-" if r.worker is None else f"{r.worker:.1f}"
        lines.append(f"  {r.mode:10} {r.ui:10.1f} {worker:>11} {r.graders:8.1f} {r.together:9.1f} "
                     f"{r.server:9.1f} {'-' if rate is None else f'{rate:.0f}':>9} "
                     f"{'-' if r.acceptance is None else f'{r.acceptance:.2f}':>10} "
                     f"{'-' if r.finished is None else r.finished:>8}")
    lines += ["", "  targets (issue 23): UI <= 5.0, together <= 20.0; the console row includes rendering at "
              f"{args.size[0]}x{args.size[1]}"]
    return "\n".join(lines)


def ddtune(env: dict[str, str], cfg: Path, *argv: str, timeout: float = 120) -> None:
    out = subprocess.run([sys.executable, "-m", "tui.cli", "--config", str(cfg), *argv], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"ddtune {' '.join(argv)} failed ({out.returncode}):\n{out.stderr[-2000:]}")


def server_process(env: dict[str, str], cfg: Path) -> psutil.Process:
    """The simulator's process, as `ddtune status --json` reports it (the session owns server.json)."""
    import json

    out = subprocess.run([sys.executable, "-m", "tui.cli", "--config", str(cfg), "status", "--json"], env=env,
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    return psutil.Process(json.loads(out.stdout)["pid"])


def main(argv: list[str] | None = None) -> int:
    from benchmarks.console_cost import parse_size

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [SUBJECT_MARK]:  # the measured program of the inprocess and worker modes
        return subject(argv[1], argv[2], int(argv[3]), int(argv[4]))

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n")[1])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=1024, help="per answer (the console's default: 1024)")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--size", type=parse_size, default=(200, 50), help="console mode: COLSxROWS")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ddtune-load-cost-") as tmp:
        root = Path(tmp)
        cfg = root / "ddtune.toml"
        cfg.write_text(f'[server]\nbackend = "sim"\nport = {free_port()}\nextra_args = ["--sim-load-seconds", "0.5"]\n')
        env = {**os.environ, "DDTUNE_STATE_DIR": str(root / "state"), "XDG_CONFIG_HOME": str(root / "config"),
               "XDG_CACHE_HOME": str(root / "cache"),
               "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
        os.environ.update({k: env[k] for k in ("DDTUNE_STATE_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")})
        print(f"starting the simulator: ddtune --config {shlex.quote(str(cfg))} up", flush=True)
        ddtune(env, cfg, "up")
        results = []
        try:
            server = server_process(env, cfg)
            url = f"http://127.0.0.1:{cfg.read_text().split('port = ')[1].split()[0]}"
            for mode in args.modes:
                print(f"{mode}: {args.concurrency} streams, {args.settle:g} s + {args.duration:g} s", flush=True)
                if mode == "console":
                    try:
                        results.append(run_console(cfg, env, server, args))
                    except ProgramEnded as exc:
                        print(f"console: {exc}", file=sys.stderr)
                else:
                    results.append(run_subject(mode, url, server, args))
        finally:
            ddtune(env, cfg, "down")
    print("\n" + table(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
