"""Drive any terminal program in a private tmux server, for end-to-end tests of the console.

    with TmuxSession([sys.executable, "-m", "tui.cli"], width=120, height=40) as tmux:
        tmux.wait_for("Server")
        tmux.send_keys("r")
        screen = tmux.wait_for(re.compile(r"ready in \\d+"))

Each session runs its own tmux server (``-L <unique name> -f /dev/null``), so tests never see the
user's tmux or each other. The pane keeps its last screen after the program exits (remain-on-exit), so a
test can read what a crashed program printed. Leaving the ``with`` block (normally or by an exception)
kills the tmux server, the program's process group and every descendant recorded on the way, then
waits until they are gone: no process survives a failing test.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence

import psutil

from tests.helpers import SCREEN_S

TERMINAL_ENV = {"TERM": "xterm-256color", "COLORTERM": "truecolor", "LANG": "C.UTF-8"}
INSTALL_HINT = "install tmux (Debian/Ubuntu: apt-get install -y tmux; .ci/run does this) and run the tests again"
POLL_S = 0.05
DEAD_NOTICE = re.compile(r"^(\x1b\[[0-9;]*m)*Pane is dead")


class TmuxMissing(RuntimeError):
    """tmux is not on PATH: end-to-end tests must fail, not skip."""


class TmuxSession:
    """One program in one pane of a private tmux server, ``width`` x ``height`` cells."""

    def __init__(self, cmd: Sequence[str], width: int = 80, height: int = 24,
                 env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
                 tmux: str = "tmux") -> None:
        if not cmd:
            raise ValueError("cmd: give the program to run as a non-empty argv list")
        self.cmd = [str(part) for part in cmd]
        self.width, self.height = width, height
        self.env = dict(os.environ if env is None else env)
        self.env.pop("TMUX", None)  # never talk to the tmux this test may itself run in
        self.env.pop("TMUX_PANE", None)
        self.env.update(TERMINAL_ENV)
        self.cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
        if not os.path.isdir(self.cwd):
            raise ValueError(f"cwd {self.cwd!r}: not a folder; give an existing working directory")
        self.tmux = shutil.which(tmux)
        if self.tmux is None:
            raise TmuxMissing(f"tmux not found on PATH ({tmux!r}): {INSTALL_HINT}")
        self.socket = f"ddtune-e2e-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.pane_pid: int | None = None
        self.server_pid: int | None = None
        self._socket_path: str | None = None
        self._seen: dict[int, psutil.Process] = {}

    # --- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> TmuxSession:
        try:
            self.start()
        except BaseException:
            self.close()  # a half-started server (exit-empty off) would otherwise outlive the test
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        # Options first, in the same command list, so they hold before the program's first byte.
        self._tmux("start-server", ";",
                   "set-option", "-g", "exit-empty", "off", ";",
                   "set-option", "-g", "remain-on-exit", "on", ";",
                   "set-option", "-g", "default-terminal", TERMINAL_ENV["TERM"], ";",
                   "set-option", "-g", "history-limit", "5000", ";",
                   "set-option", "-g", "status", "off", ";",
                   "new-session", "-d", "-s", "main", "-x", str(self.width), "-y", str(self.height),
                   "-c", self.cwd, "--", *self.cmd)
        info = self._tmux("display-message", "-p", "-t", "main", "#{pane_pid} #{pid} #{socket_path}")
        pane_pid, server_pid, self._socket_path = info.strip().split(" ", 2)
        self.pane_pid, self.server_pid = int(pane_pid), int(server_pid)
        self._remember()

    def close(self) -> None:
        """Kill the tmux server, the program's process group and its recorded descendants; wait."""
        self._remember()
        procs = list(self._seen.values())
        if self.server_pid is not None:
            try:
                procs.append(psutil.Process(self.server_pid))
            except psutil.NoSuchProcess:
                pass
        subprocess.run([self.tmux, "-L", self.socket, "kill-server"], env=self.env,
                       capture_output=True, timeout=30)
        pane = self._seen.get(self.pane_pid) if self.pane_pid else None
        if pane is not None and pane.is_running():  # is_running() guards against pid reuse
            try:
                os.killpg(self.pane_pid, signal.SIGKILL)  # forkpty made the pane its own session leader
            except (ProcessLookupError, PermissionError):
                pass
        for proc in procs:
            try:
                if proc.is_running():
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        alive = _wait_gone(procs, timeout=30)
        default_dir = os.path.join(self.env.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}")
        try:
            os.unlink(self._socket_path or os.path.join(default_dir, self.socket))
        except FileNotFoundError:
            pass
        if alive:
            raise AssertionError(f"processes survived tmux cleanup: {[p.pid for p in alive]}")

    def _remember(self) -> None:
        """Record the pane process and all its descendants, so close() can kill even setsid() ones."""
        if self.pane_pid is None:
            return
        try:
            pane = self._seen.get(self.pane_pid) or psutil.Process(self.pane_pid)
            self._seen[pane.pid] = pane
            for child in pane.children(recursive=True):
                self._seen.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            pass

    # --- talking to the program -------------------------------------------------------------------
    def send_keys(self, *keys: str) -> None:
        """tmux key names ("Enter", "C-c", "Escape", "Up", "F5") or plain words, as ``tmux send-keys``."""
        self._tmux("send-keys", "-t", "main", *keys)

    def type_text(self, text: str) -> None:
        """Type ``text`` literally (no key-name lookup: "Enter" is five letters here)."""
        self._tmux("send-keys", "-t", "main", "-l", text)

    def capture(self, escapes: bool = False) -> str:
        """The program's screen as text, one line per row, trailing spaces trimmed (``escapes`` keeps colours).

        After the program exits, tmux scrolls the pane up one row to print "Pane is dead"; the row
        scrolled into history is put back and that notice left out, so this is the program's last screen.
        """
        args = ["capture-pane", "-p", "-t", "main", "-S", "-1"] + (["-e"] if escapes else [])
        self._remember()
        out = self._tmux(*args)
        lines = out.removesuffix("\n").split("\n")
        if len(lines) > self.height and DEAD_NOTICE.match(lines[-1]):
            lines = lines[:-1]  # the row from history, then the rows above the notice
        lines = lines[-self.height:]
        return "\n".join(lines) + "\n"

    def resize(self, width: int, height: int) -> None:
        self._tmux("resize-window", "-t", "main", "-x", str(width), "-y", str(height))
        self.width, self.height = width, height

    def exit_status(self) -> int | None:
        """The program's exit status once tmux has reaped it (minus the signal number if killed), else None."""
        dead, status, sig = (self._tmux("display-message", "-p", "-t", "main",
                                        "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}")
                             .strip().split("|"))
        if dead != "1":
            return None
        if not (status or sig):
            # The pane's terminal has closed but tmux has not reaped the program: tmux 3.3a here
            # sometimes misses the SIGCHLD (the program stays a zombie for good). Deliver it again;
            # the server's handler only calls waitpid(WNOHANG).
            self._signal_server(signal.SIGCHLD)
            return None
        return int(status) if status else -int(sig)

    def _signal_server(self, sig: int) -> None:
        if self.server_pid is None:
            return
        try:
            server = psutil.Process(self.server_pid)
            if server.name().startswith("tmux"):
                server.send_signal(sig)
        except psutil.NoSuchProcess:
            pass

    # --- waiting ------------------------------------------------------------------------------------
    def wait_for(self, pattern: str | re.Pattern[str], timeout: float = SCREEN_S) -> str:
        """Poll the screen until ``pattern`` (substring or compiled regex) is on it; return that screen."""
        return self._wait(pattern, timeout, present=True)

    def wait_gone(self, pattern: str | re.Pattern[str], timeout: float = SCREEN_S) -> str:
        """Poll the screen until ``pattern`` is no longer on it; return that screen."""
        return self._wait(pattern, timeout, present=False)

    def wait_exit(self, timeout: float = SCREEN_S) -> int:
        """Wait for the program to end; return its exit status."""
        deadline = time.monotonic() + timeout
        while (status := self.exit_status()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"program still running after {timeout} s: {self.cmd}\n"
                                     f"last screen:\n{self.capture()}")
            time.sleep(POLL_S)
        return status

    def _wait(self, pattern: str | re.Pattern[str], timeout: float, present: bool) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture()
            if _found(pattern, screen) == present:
                return screen
            if time.monotonic() > deadline:
                what = "to appear" if present else "to go away"
                shown = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
                status = self.exit_status()
                ended = "" if status is None else f" (the program had exited with status {status})"
                raise AssertionError(f"timed out after {timeout} s waiting for {shown!r} {what}{ended}; "
                                     f"last screen ({self.width}x{self.height}):\n{_framed(screen)}")
            time.sleep(POLL_S)

    def _tmux(self, *args: str) -> str:
        out = subprocess.run([self.tmux, "-L", self.socket, "-f", os.devnull, *args], env=self.env,
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:1])} failed ({out.returncode}): {out.stderr.strip()}")
        return out.stdout


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until every process has exited (a zombie counts as gone: only its parent can reap it)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in procs if _running(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(POLL_S)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _found(pattern: str | re.Pattern[str], screen: str) -> bool:
    if isinstance(pattern, re.Pattern):
        return pattern.search(screen) is not None
    return pattern in screen


def _framed(screen: str) -> str:
    lines = screen.rstrip("\n").split("\n")
    return "\n".join(f"| {line}" for line in lines)
