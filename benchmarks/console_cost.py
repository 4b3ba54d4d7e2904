"""What a terminal program costs to keep open: CPU of its process tree, bytes it writes, memory.

    python benchmarks/console_cost.py                                   # the ddtune console, 200x50, 5 s + 30 s
    python benchmarks/console_cost.py --cmd "top -d 1"                  # any program
    python benchmarks/console_cost.py --cmd "python -m tests.e2e.standin_app --log-rate 50"
    python benchmarks/console_cost.py --duration 600 --rss-every 30     # the 10-minute RSS flatness run
    python benchmarks/console_cost.py --rows                            # and which screen rows the bytes went to

The program runs in its own session on a real pty of --size (TIOCSWINSZ) whose other end this script
drains as fast as it writes, counting every byte (the terminal replies to no queries). After --settle
seconds, for --duration seconds it measures: CPU time of the whole tree (every live process's user+system
plus what it reaped from children) over wall time, as % of one core, both for the program alone and the
tree; bytes/s written to the terminal; RSS of the tree at start, end, and its maximum (sampled every
--rss-every seconds when given); with --rows, the bytes/s written to each screen row (after each cursor
move to it), the busiest first: what repaints when nothing should. Then it stops the process group
(SIGTERM, then SIGKILL after 5 s) and any descendant that left the group, and prints the figures next
to reference figures for comparison.
Figures only: nothing here is asserted anywhere.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import select
import shlex
import signal
import struct
import sys
import termios
import time
from dataclasses import asdict, dataclass

import psutil

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TERMINAL_ENV = {"TERM": "xterm-256color", "COLORTERM": "truecolor", "LANG": "C.UTF-8"}

# Reference figures from the shared field notes (reference/field.md, "Numbers to beat"): measured on an
# H200 box, 200x50 pty, 30 s. (name, % of one core, bytes/s to the terminal)
REFERENCES = (
    ("nvitop (2 s refresh)", 1.0, 530),
    ("Textual: NVML + sparkline + table, 2 Hz", 1.9, 12_800),
    ("Textual + Log 50 lines/s, batched 4 Hz", 11.6, 106_000),
    ("Textual + Log 50 lines/s, one at a time", 68.0, 600_000),
)


@dataclass(frozen=True)
class TreeSample:
    at: float  # time.monotonic()
    cpu_root: float  # CPU seconds of the program itself (including children it reaped)
    cpu_tree: float  # CPU seconds of every live process in the tree (including reaped children)
    rss: int  # bytes, summed over the tree
    processes: int


@dataclass(frozen=True)
class Cost:
    command: str
    size: str
    settle_s: float
    duration_s: float
    cpu_pct_root: float
    cpu_pct_tree: float
    bytes_total: int
    bytes_per_s: float
    rss_start: int
    rss_end: int
    rss_max: int
    processes_end: int
    rss_series: tuple[tuple[float, int], ...]  # (seconds into the window, RSS bytes)
    rows: tuple[tuple[int, int], ...] = ()  # --rows: (screen row, bytes written to it), the most first


class ProgramEnded(RuntimeError):
    pass


class PtyProgram:
    """A command in its own session on a pty of ``cols`` x ``rows``; the parent end is drained and counted."""

    def __init__(self, argv: list[str], cols: int, rows: int, env: dict[str, str], cwd: str) -> None:
        self.argv = argv
        pid, fd = pty.fork()  # the child is a session leader with the pty as controlling terminal
        if pid == 0:
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            except BaseException as exc:  # noqa: BLE001 - the child must never return into the script
                os.write(2, f"console_cost: cannot run {argv[0]!r}: {exc}\r\n".encode())
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.root = psutil.Process(pid)
        self.bytes = 0
        self.tail = b""
        self.kept: bytearray | None = None  # everything read while not None (measure(rows=True))
        self.status: int | None = None
        self._tree: dict[int, psutil.Process] = {pid: self.root}

    def drain(self, seconds: float) -> None:
        """Read everything the program writes for ``seconds``; raise ProgramEnded if it exits."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            closed = ready and not self._read()
            if closed:  # EOF/EIO: nothing holds the terminal any more; give it a moment to be reaped
                end = time.monotonic() + 5
                while not self._reaped() and time.monotonic() < end:
                    time.sleep(0.05)
            if self._reaped() or closed:
                ended = f"exited with status {self.status}" if self.status is not None else "closed its terminal"
                raise ProgramEnded(f"the program {ended}; its last output:\n"
                                   f"{self.tail.decode(errors='replace')[-600:]}")

    def _read(self) -> bool:
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: every process holding the pty's other end has gone
            data = b""
        self.bytes += len(data)
        self.tail = (self.tail + data)[-4096:]
        if self.kept is not None:
            self.kept += data
        return bool(data)

    def _reaped(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is not None

    def sample(self) -> TreeSample:
        procs = [self.root]
        try:
            procs += self.root.children(recursive=True)
        except psutil.NoSuchProcess:
            pass
        cpu_root = cpu_tree = 0.0
        rss = 0
        for proc in procs:
            self._tree.setdefault(proc.pid, proc)
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    rss += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                continue
            spent = t.user + t.system + t.children_user + t.children_system
            cpu_tree += spent
            if proc.pid == self.pid:
                cpu_root = spent
        return TreeSample(time.monotonic(), cpu_root, cpu_tree, rss, len(procs))

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the process group, keep draining, SIGKILL what is left (group and recorded tree)."""
        self.sample()  # record the latest descendants, including any that left the group
        _signal_group(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.status is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                self._read()
            self._reaped()
        _signal_group(self.pid, signal.SIGKILL)
        for proc in self._tree.values():
            try:
                if proc.pid != self.pid and proc.is_running():
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        if self.status is None:
            self.status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        psutil.wait_procs([p for p in self._tree.values() if p.pid != self.pid], timeout=10)
        os.close(self.fd)


_MOVE = re.compile(rb"\x1b\[(\d+)(?:;\d+)?H")  # CSI row;col H: the cursor moves to a row


def written_rows(data: bytes) -> dict[int, int]:
    """Bytes written to each screen row (1-based): what follows a cursor move to it, up to the
    next move (row 0: before the first move). Each repaint of a row costs it its bytes again."""
    rows: dict[int, int] = {}
    row, at = 0, 0
    for move in _MOVE.finditer(data):
        rows[row] = rows.get(row, 0) + move.start() - at
        row, at = int(move.group(1)), move.end()
    rows[row] = rows.get(row, 0) + len(data) - at
    return {r: n for r, n in rows.items() if n}


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def measure(program: PtyProgram, settle: float, duration: float, rss_every: float, size: str,
            report=print, rows: bool = False) -> Cost:
    program.drain(settle)
    first = program.sample()
    counted_from = program.bytes
    if rows:
        program.kept = bytearray()
    series = [(0.0, first.rss)]
    end_at = first.at + duration
    while (now := time.monotonic()) < end_at:
        step = min(rss_every or duration, end_at - now)
        program.drain(step)
        if rss_every and time.monotonic() < end_at - 0.01:
            sample = program.sample()
            series.append((sample.at - first.at, sample.rss))
            report(f"  {sample.at - first.at:7.1f} s  RSS {sample.rss / 2**20:8.1f} MiB  "
                   f"({sample.processes} processes)")
    last = program.sample()
    series.append((last.at - first.at, last.rss))
    wall = last.at - first.at
    written = program.bytes - counted_from
    return Cost(command=shlex.join(program.argv), size=size, settle_s=settle, duration_s=round(wall, 3),
                cpu_pct_root=100 * (last.cpu_root - first.cpu_root) / wall,
                cpu_pct_tree=100 * (last.cpu_tree - first.cpu_tree) / wall,
                bytes_total=written, bytes_per_s=written / wall,
                rss_start=first.rss, rss_end=last.rss, rss_max=max(rss for _, rss in series),
                processes_end=last.processes, rss_series=tuple((round(t, 1), r) for t, r in series),
                rows=tuple(sorted(written_rows(bytes(program.kept)).items(), key=lambda rb: (-rb[1], rb[0])))
                if program.kept is not None else ())


def table(cost: Cost) -> str:
    mib = 2**20
    rows = [f"console cost of: {cost.command}",
            f"  {cost.size} pty, settle {cost.settle_s:g} s, measured {cost.duration_s:.1f} s, "
            f"{cost.processes_end} process(es) in the tree at the end",
            "",
            f"  {'':50} {'% of a core':>11} {'bytes/s':>10}",
            f"  {'measured: whole process tree':50} {cost.cpu_pct_tree:11.1f} {cost.bytes_per_s:10.0f}",
            f"  {'measured: the program alone':50} {cost.cpu_pct_root:11.1f} {'':>10}"]
    rows += [f"  {'reference: ' + name:50} {pct:11.1f} {bps:10.0f}" for name, pct, bps in REFERENCES]
    rows += ["",
             f"  RSS of the tree (MiB): start {cost.rss_start / mib:.1f}, end {cost.rss_end / mib:.1f}, "
             f"max {cost.rss_max / mib:.1f}  (growth {(cost.rss_end - cost.rss_start) / mib:+.1f})",
             "  references: reference/field.md, an H200 box, 200x50 pty, 30 s"]
    if cost.rows:
        rows += ["", "  bytes/s by screen row (the busiest 12; row 0: before any cursor move):"]
        rows += [f"    row {row:3d}  {n / cost.duration_s:10.0f}" for row, n in cost.rows[:12]]
    return "\n".join(rows)


def parse_size(text: str) -> tuple[int, int]:
    try:
        cols, rows = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size {text!r}: give COLSxROWS, e.g. 200x50") from None
    if not (10 <= cols <= 1000 and 5 <= rows <= 500):
        raise argparse.ArgumentTypeError(f"--size {text!r}: columns 10-1000 and rows 5-500")
    return cols, rows


def parse_env(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--env {text!r}: give KEY=VALUE, e.g. --env DDTUNE_STATE_DIR=/tmp/s")
    return key, value


def positive(name: str, allow_zero: bool = False):
    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if value < 0 or (value == 0 and not allow_zero):
            raise argparse.ArgumentTypeError(f"{name} {text!r}: give a number of seconds above 0")
        return value
    return check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n")[1])
    parser.add_argument("--cmd", default=f"{shlex.quote(sys.executable)} -m tui.cli",
                        help="the program to run, as one shell-quoted string (default: the ddtune console)")
    parser.add_argument("--size", type=parse_size, default=(200, 50), help="COLSxROWS (default 200x50)")
    parser.add_argument("--duration", type=positive("--duration"), default=30.0,
                        help="seconds to measure (default 30)")
    parser.add_argument("--settle", type=positive("--settle", allow_zero=True), default=5.0,
                        help="seconds to let it start before measuring (default 5)")
    parser.add_argument("--rss-every", type=positive("--rss-every", allow_zero=True), default=0.0,
                        help="also sample RSS every this many seconds and print each sample (default: off)")
    parser.add_argument("--env", type=parse_env, action="append", default=[], metavar="K=V",
                        help="extra environment for the program (repeatable)")
    parser.add_argument("--cwd", default=REPO, help="working directory (default: this checkout)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--rows", action="store_true",
                        help="also count the bytes written to each screen row (what repaints)")
    args = parser.parse_args(argv)
    command = shlex.split(args.cmd)
    if not command:
        parser.error("--cmd: give the program to run, e.g. --cmd 'top -d 1'")
    cols, rows = args.size
    env = {**os.environ, **TERMINAL_ENV, **dict(args.env)}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    say = (lambda _line: None) if args.json else (lambda line: print(line, flush=True))
    say(f"running {args.cmd!r} on a {cols}x{rows} pty: settle {args.settle:g} s, then {args.duration:g} s")
    program = PtyProgram(command, cols, rows, env, args.cwd)
    try:
        cost = measure(program, args.settle, args.duration, args.rss_every, f"{cols}x{rows}", report=say,
                       rows=args.rows)
    except ProgramEnded as exc:
        print(f"console_cost: {exc}", file=sys.stderr)
        return 1
    finally:
        program.stop()
    print(json.dumps(asdict(cost), indent=2) if args.json else "\n" + table(cost))
    return 0


if __name__ == "__main__":
    sys.exit(main())
