"""Fixtures for end-to-end tests of the console in tmux.

CONSOLE_CMD is what ``open_console`` runs: the real console, ``python -m tui.cli``.
"""

from __future__ import annotations

import pytest

from tests.e2e.tmux import TmuxSession
from tests.helpers import REPO, ddtune_cmd, ddtune_env

CONSOLE_CMD: list[str] = ddtune_cmd()


@pytest.fixture
def open_console(state_dir):
    """``open_console(*args, width=120, height=40, **env)`` -> a started TmuxSession of CONSOLE_CMD + args.

    It runs from the checkout with the test's private DDTUNE_STATE_DIR; every session opened is closed
    (tmux server, process group, descendants) when the test ends, pass or fail.
    """
    sessions: list[TmuxSession] = []

    def open_(*args: str, width: int = 120, height: int = 40, **env: str) -> TmuxSession:
        session = TmuxSession([*CONSOLE_CMD, *args], width=width, height=height,
                              env=ddtune_env(DDTUNE_STATE_DIR=str(state_dir), **env), cwd=REPO)
        sessions.append(session)
        session.start()
        return session

    try:
        yield open_
    finally:
        errors = []
        for session in reversed(sessions):
            try:
                session.close()
            except AssertionError as exc:  # pragma: no cover - only when a process survives SIGKILL
                errors.append(exc)
        if errors:
            raise errors[0]
