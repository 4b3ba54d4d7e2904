"""doctor's SGLang version is the console's (issue 12, item 5): ``sglang_version`` reads the same
/server_info the ServerSession reads when a server runs, so the two can never disagree."""

from __future__ import annotations

import asyncio

from backends.knobs.serverhelp import sglang_version
from backends.server.session import ServerSession
from tests.backends.lifecycle_support import FAST, config


def test_version_matches_the_sessions_while_a_server_runs(tmp_path, state_dir, groups):
    cfg = config(tmp_path, extra=(*FAST, "--sim-version", "0.5.11"))

    async def run():
        session = ServerSession(cfg, stream_log=False)
        try:
            state = await session.up()
            groups.track(state.pgid)
            found = await asyncio.to_thread(sglang_version, cfg, session.backend, session.current())
            return session.version, found
        finally:
            await session.close()

    console_version, found = asyncio.run(run())
    assert console_version == "0.5.11"
    assert found.version == console_version and found.source.startswith("/server_info of the running server")


def test_without_a_server_it_says_where_the_version_came_from(tmp_path, state_dir):
    cfg = config(tmp_path, backend="sglang")  # the stand-in sglang package, version 0.5.23
    from backends.drivers.registry import make_driver

    found = sglang_version(cfg, make_driver(cfg), None)
    assert found.version == "0.5.23" and found.source == f"the sglang package installed for {cfg.python}"
    missing = config(tmp_path, backend="sglang", python="/bin/false", name="missing.toml")
    nothing = sglang_version(missing, make_driver(missing), None)
    assert nothing.version is None
    assert nothing.source == "no server is running, and /bin/false has no sglang package installed"
