"""Untrusted text is text (issue 19): the console on a hostile simulator (``--sim-hostile``) shows
Textual actions and markup from the server literally; clicking them runs nothing."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from rich.console import Console

from backends.knobs.config import load_config
from tests.backends.lifecycle_support import write_config
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.widgets.server_panel import ServerPanel


def hostile_text(shot) -> str:
    return (f"\x1b]2;pwned\x07\x1b[31mRED\x1b[0m [@click=app.quit]quit[/] "
            f"[@click=app.screenshot('{shot.name}','{shot.parent}')]shot[/] [bold red]markup[/bold red]")


def hostile_app(tmp_path, shot) -> DdtuneApp:
    """A knob verified from /server_info's served_model_name, which the hostile server fills."""
    path = write_config(tmp_path, extra=("--sim-load-seconds", "0.1", "--sim-hostile", hostile_text(shot)),
                        knobs={"window": 2048, "name": "demo"})
    path.write_text(path.read_text() + '[knob.name]\ntype = "str"\nflag = "--tokenizer-path"\n'
                    'verify = { server_info = "served_model_name" }\n')
    return DdtuneApp(ConsoleController(load_config(path), simulated=True))


def where(widget, row: str, label: str) -> tuple[int, int]:
    """Where ``label`` (an action's visible text, not the action's name) is in the cell that starts
    on the row holding ``row`` (a long cell wraps onto the rows below)."""
    lines = [widget.render_line(y).text for y in range(widget.size.height)]
    first = next((y for y, text in enumerate(lines) if row in text), None)
    pattern = re.compile(rf"(?<![.\w']){label}(?=\[|\s|$)")
    for y in range(first, len(lines)) if first is not None else ():
        found = pattern.search(lines[y], lines[y].find(row) + 1 if y == first else 0)
        if found:
            return found.start(), y
    raise AssertionError(f"{label!r} not shown in the cell on the row holding {row!r}: {lines}")


@pytest.fixture
def shot():
    """Where a live screenshot action would write: a short path, so the hostile cell shows whole."""
    folder = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))
    yield folder / "s.svg"
    shutil.rmtree(folder, ignore_errors=True)


async def test_server_markup_is_shown_literally_and_clicking_it_runs_nothing(tmp_path, groups, shot):
    app = hostile_app(tmp_path, shot)
    async with app.run_test(size=(200, 40)) as pilot:
        panel = app.main.query_one(ServerPanel)
        deadline = time.monotonic() + 45
        while not any(row.name == "name" and row.verified is False for row in panel.view.knobs):
            assert time.monotonic() < deadline, panel.view
            await pilot.pause(0.1)
        groups.track_state()
        await pilot.pause(0.3)
        for label in ("shot", "quit"):   # a click where each action's text is in the knob table: nothing runs
            x, y = where(panel, "name    demo", label)
            inner = panel.content_region.offset - panel.region.offset  # render_line counts from the content
            assert await pilot.click(ServerPanel, offset=(inner.x + x + 1, inner.y + y))
            await pilot.pause(0.3)
            assert not list(shot.parent.iterdir()), f"clicking {label!r} wrote a screenshot"
            assert app.is_running and app.return_code is None, f"clicking {label!r} quit the console"

        console = Console(width=200, record=True, color_system=None)
        console.print(panel.render())
        shown = console.export_text()
        assert re.search(r"name\s+demo\s+demoRED \[@click=app\.quit\]quit\[/\]", shown), shown  # the table cell
        assert "[bold red]markup[/bold red]" in shown and "pwned" not in shown and "\x1b" not in shown

        app.notify("load stopped: [@click=app.quit]quit[/] [b]x[/b]")  # notifications too: plain text
        await pilot.pause(0.2)
        notice = list(app._notifications)[-1]
        assert notice.markup is False and notice.message.endswith("[@click=app.quit]quit[/] [b]x[/b]")
