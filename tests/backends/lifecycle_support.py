"""Helpers for lifecycle tests: configs on free ports, the stand-in sglang module, and cleanup that
kills every process group a test started and asserts none survives."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from backends.knobs.config import load_config
from backends.launch.process import group_members
from tests.helpers import REPO, free_port

# the simulator's paced startup: short where a test only waits for ready; long enough to see each
# startup phase go by (the log is read in batches, so a 0.1 s startup can skip a phase) where it watches them
FAST = ("--sim-load-seconds", "0.1")
PHASED = ("--sim-load-seconds", "0.5")

STANDIN_MAIN = (
    "import sys\n"
    "from backends.sim import main\n"
    "if __name__ == '__main__':\n"
    "    sys.exit(main(sys.argv[1:]))\n"
)


def make_standin(root: Path, version: str = "0.5.23") -> Path:
    """A directory holding a stand-in ``sglang`` package whose launch_server runs the simulator,
    plus dist metadata so ddtune caches its --help under that version."""
    pkg = root / "sglang"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(f"__version__ = {version!r}\n")
    (pkg / "launch_server.py").write_text(STANDIN_MAIN)
    dist = root / f"sglang-{version}.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
    return root


def toml_value(value) -> str:
    return json.dumps(value) if not isinstance(value, bool) else ("true" if value else "false")


def write_config(tmp_path: Path, backend: str = "sim", extra: tuple[str, ...] = FAST, knobs: dict | None = None,
                 port: int | None = None, name: str = "ddtune.toml", **server) -> Path:
    port = port or free_port()
    lines = ["[server]", f'backend = "{backend}"', 'model = "demo"', 'draft_model = "demo-draft"',
             f"port = {port}", f"extra_args = {json.dumps(list(extra))}"]
    if backend == "sglang":
        standin = make_standin(tmp_path / "standin")
        server.setdefault("python", sys.executable)
        lines_env = {"PYTHONPATH": os.pathsep.join([str(standin), str(REPO)])}
    else:
        lines_env = {}
    server.setdefault("ready_timeout_s", 60)
    server.setdefault("stop_timeout_s", 20)
    for key, value in server.items():
        lines.append(f"{key} = {toml_value(value)}")
    lines.append("[server.env]")
    for key, value in lines_env.items():
        lines.append(f"{key} = {toml_value(value)}")
    lines.append("[knobs]")
    for key, value in (knobs or {"window": 2048}).items():
        lines.append(f"{key} = {toml_value('none' if value is None else value)}")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def config(tmp_path: Path, **kw):
    return load_config(write_config(tmp_path, **kw))


def headless(cfg, notes: list | None = None, phases: list | None = None, **kw):
    """A ServerSession as the headless commands make one (no log streaming), its notes and phases
    (Progress) collected into the lists given."""
    from backends.server.events import NoteAdded, PhaseChanged
    from backends.server.session import ServerSession

    session = ServerSession(cfg, stream_log=False, **kw)

    def collect(event) -> None:
        if notes is not None and isinstance(event, NoteAdded):
            notes.append(event.text)
        if phases is not None and isinstance(event, PhaseChanged):
            phases.append(event.progress)

    session.subscribe(collect)
    return session


def read_state(state_dir: Path) -> dict | None:
    try:  # no exists() first: a restart clears the file between the look and the read
        return json.loads((state_dir / "server.json").read_text())
    except FileNotFoundError:
        return None


class Groups:
    """Process groups a test started; killed and checked at teardown."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.pgids: set[int] = set()

    def track(self, pgid: int | None) -> None:
        if pgid:
            self.pgids.add(pgid)

    def track_state(self) -> dict | None:
        state = read_state(self.state_dir)
        if state:
            self.track(state.get("pgid"))
        return state

    def finish(self) -> list[int]:
        self.track_state()
        for pgid in self.pgids:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 30
        left: list[int] = []
        while time.monotonic() < deadline:
            for pgid in self.pgids:
                try:
                    os.waitpid(pgid, os.WNOHANG)
                except ChildProcessError:
                    pass
            left = [pid for pgid in self.pgids for pid in group_members(pgid)]
            if not left:
                break
            time.sleep(0.1)
        return left


@pytest.fixture
def groups(state_dir):
    tracker = Groups(state_dir)
    try:
        yield tracker
    finally:
        left = tracker.finish()
        assert left == [], f"processes left running: {left}"
