"""The systemd backend: the server is a unit (system or ``--user``) that ddtune configures.

ddtune writes its launch command and knob env vars to a drop-in (``UNIT.d/ddtune.conf``, replacing
ExecStart), reloads systemd, and stops/starts the unit; logs come from ``journalctl -u UNIT -f -o
cat`` and the pid from ``systemctl show -p MainPID``. Commands are built by pure functions so they
can be tested where systemd does not exist; ``run`` is injectable.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from backends.drivers.base import Driver
from backends.core.errors import ServerError
from backends.core.writes import PRIVATE, WriteFailed, make_folder, write_atomic
from backends.knobs.plan import LaunchPlan
from backends.launch.ownership import StopReport
from backends.launch.process import create_time, is_running
from backends.knobs.serverhelp import ServerHelp, fetch_help, installed_version
from backends.record.state import ServerState

Runner = Callable[[list[str]], subprocess.CompletedProcess]


def _default_run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def systemctl(user: bool, *args: str) -> list[str]:
    return ["systemctl", *(["--user"] if user else []), *args]


def journalctl_follow(unit: str, user: bool, since: str | None = None) -> list[str]:
    argv = ["journalctl", *(["--user"] if user else []), "-u", unit, "-f", "-o", "cat"]
    if since:
        argv += ["--since", since]
    return argv


def dropin_path(unit: str, user: bool, explicit: str | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    name = unit if "." in unit else f"{unit}.service"
    base = Path("~/.config/systemd/user").expanduser() if user else Path("/etc/systemd/system")
    return base / f"{name}.d" / "ddtune.conf"


def dropin_text(plan: LaunchPlan) -> str:
    """A drop-in that replaces ExecStart with ddtune's command and sets the knob env vars."""
    lines = ["# Written by ddtune: the launch command and knobs it manages. Edit ddtune.toml instead.",
             "[Service]", "ExecStart=", f"ExecStart={shlex.join(plan.argv)}"]
    for key, value in sorted(plan.env.items()):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'Environment="{key}={escaped}"')
    return "\n".join(lines) + "\n"


class SystemdDriver(Driver):
    NAME = "systemd"
    STOPS_BY_UNIT = True

    def __init__(self, config, run: Runner = _default_run) -> None:
        super().__init__(config)
        self.run = run
        self.unit: str = config.unit or "sglang.service"
        self.user = config.user

    def command_prefix(self) -> tuple[str, ...]:
        return (self.config.python, "-m", "sglang.launch_server")

    def learn_help(self) -> ServerHelp:
        env = self.server_env()
        return fetch_help(self.command_prefix(), env, installed_version(self.config.python, env))

    def _check(self, argv: list[str]) -> subprocess.CompletedProcess:
        try:
            out = self.run(argv)
        except FileNotFoundError as exc:
            raise ServerError(f"'{argv[0]}' not found: the systemd backend needs systemd",
                              hint='use backend = "sglang" to let ddtune run the server itself') from exc
        if out.returncode != 0:
            raise ServerError(f"'{shlex.join(argv)}' failed (exit {out.returncode}): {(out.stderr or '').strip()}",
                              hint="check the unit name and your permissions (system units need root; try user = true)")
        return out

    def main_pid(self) -> int | None:
        out = self._check(systemctl(self.user, "show", "-p", "MainPID", "--value", self.unit))
        text = out.stdout.strip().removeprefix("MainPID=")
        return int(text) if text.isdigit() and int(text) > 0 else None

    async def start(self, plan: LaunchPlan, record: Callable[[ServerState], object] | None = None) -> ServerState:
        path = dropin_path(self.unit, self.user, self.config.knob_file)
        text = dropin_text(plan)
        await asyncio.to_thread(self._write_dropin, path, text)
        started_at = time.time()
        await asyncio.to_thread(self._check, systemctl(self.user, "daemon-reload"))
        await asyncio.to_thread(self._check, systemctl(self.user, "start", self.unit))
        pid = await asyncio.to_thread(self.main_pid)
        return self.launch_state(plan, pid=pid, started_at=started_at, create_time=create_time(pid) if pid else None,
                                 unit=self.unit)

    @staticmethod
    def _write_dropin(path: Path, text: str) -> None:
        """0600: ExecStart carries the server's argv, --api-key included (systemd reads it as root).
        Never through a link, never in a folder another user rules (backends.core.writes)."""
        try:
            make_folder(path.parent)
            write_atomic(path, text, PRIVATE)
        except WriteFailed as exc:
            raise ServerError(f"cannot write the systemd drop-in {path}: {exc.reason}",
                              hint="run as root for a system unit, use user = true, or set knob_file to a writable path"
                              ) from None

    async def stop(self, state: ServerState | None) -> StopReport:
        pid = state.pid if state else None
        await asyncio.to_thread(self._check, systemctl(self.user, "stop", self.unit))
        return StopReport(True, (), (pid,) if pid and is_running(pid) else ())

    async def is_running(self, state: ServerState) -> bool:
        if state.pid is None:
            return False
        return is_running(state.pid, state.create_time)

    async def log_lines(self, state: ServerState | None, from_start: bool = True) -> AsyncIterator[str]:
        since = None
        if state is not None and from_start:
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.started_at))
        argv = journalctl_follow(self.unit, self.user, since)
        proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.DEVNULL)
        from backends.logs.splitter import LineSplitter

        splitter = LineSplitter()
        try:
            while chunk := await proc.stdout.read(65536):  # type: ignore[union-attr]
                for line in splitter.feed(chunk):
                    yield line
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
