"""Issue 32: re-attaching says one consistent thing and shows the phase the server is in.

A tuned server kept on re-attach got two notes that contradicted each other ("keeping its knobs",
then "it already runs this config"); a re-attached server still importing showed
``waiting-for-port-and-gpu`` (its port and GPU were free when it was launched)."""

from __future__ import annotations

import asyncio
import sys

from backends.knobs.config import load_config
from backends.server.session import ServerSession
from tests.backends.lifecycle_support import headless, read_state, write_config

SLOW_IMPORT = (  # a stand-in launch_server that imports for 2 s before it runs the simulator
    "import sys, time\n"
    "time.sleep(2.0)\n"
    "from backends.sim import main\n"
    "if __name__ == '__main__':\n"
    "    sys.exit(main(sys.argv[1:]))\n"
)


async def test_a_kept_tuned_server_is_said_once_and_consistently(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path)
    first = ServerSession(load_config(cfg), stream_log=False)
    tuned = await first.restart(knobs={"window": 1024})
    groups.track(tuned.pgid)
    await first.close()
    notes: list[str] = []
    again = headless(load_config(cfg), notes)
    try:
        state = await again.up(keep_running_knobs=True)
        assert state.pid == tuned.pid
        said = [n for n in notes if "re-attached" in n or "kept" in n or "this config" in n]
        assert said == [f"re-attached to pid {tuned.pid} (ready): it runs window=1024 (the file says 2048), kept; "
                        "apply the config file with `ddtune up --apply-config` (or `a` in the console)"], notes
    finally:
        await again.stop()
        await again.close()


async def test_a_re_attached_server_still_importing_shows_importing(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, backend="sglang", python=sys.executable)  # its stand-in sglang, in tmp_path/standin
    (tmp_path / "standin" / "sglang" / "launch_server.py").write_text(SLOW_IMPORT)
    launcher = ServerSession(load_config(cfg), stream_log=False)
    start = asyncio.ensure_future(launcher.up())
    try:
        for _ in range(200):  # launched: its record names a pid (it is importing for 2 s)
            record = read_state(state_dir)
            if record and record.get("pid"):
                break
            await asyncio.sleep(0.02)
        groups.track(record["pgid"])
        start.cancel()  # the ddtune that launched it is gone; the server goes on importing
        await asyncio.gather(start, return_exceptions=True)
        await launcher.close()
        phases: list = []
        session = headless(load_config(cfg), phases=phases)
        state = await session.up()
        assert state.phase == "ready" and state.pid == record["pid"]
        seen = [(p.phase, p.detail) for p in phases]
        assert seen[0] == ("starting-process", f"pid {record['pid']} importing (re-attached)"), seen
        assert "waiting-for-port-and-gpu" not in [phase for phase, _ in seen], seen
        await session.stop()
        await session.close()
    finally:
        start.cancel()
