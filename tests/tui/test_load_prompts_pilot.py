"""The console's load runs any prompt source: p opens the picker, a typed file is read first (a bad
one is said there and nothing changes), a running load restarts on the new source, and the A/B
strip and the plots' legend name it. On the real simulator, with the real load worker."""

from __future__ import annotations

import json

from backends.knobs.config import load_config
from tests.backends.lifecycle_support import write_config
from tests.tui.test_console_pilot import panel, wait_until
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.screens.prompts_picker import PromptsPicker
from tui.widgets.ab_strip import ABStrip
from tui.widgets.live_plots import LivePlots
from tui.widgets.requests_table import RequestsTable


async def test_p_picks_a_file_and_the_running_load_restarts_on_it(tmp_path, groups, state_dir):
    prompts = tmp_path / "mine.jsonl"
    prompts.write_text(json.dumps({"prompt": "Define throughput."}) + "\n"
                       + json.dumps({"prompt": "Define latency."}) + "\n")
    config = load_config(write_config(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-step-ms", "2")))
    app = DdtuneApp(ConsoleController(config, simulated=True, load_concurrency=2, load_max_tokens=32,
                                      autostart_load=True))
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.main.query_one(RequestsTable)
        await wait_until(pilot, lambda: panel(app).phase == "ready" and table.total >= 2, what="the coding load")
        strip, plots = app.main.query_one(ABStrip), app.main.query_one(LivePlots)
        assert strip.source == "coding" and plots.source == "coding"
        await pilot.press("p")
        assert isinstance(app.screen, PromptsPicker)
        field = app.screen.query_one("#prompts-path")
        field.focus()
        field.value = str(tmp_path / "missing.jsonl")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "no such file" in str(app.screen.query_one("#prompts-error").render()),
                         what="the picker to say the file is missing")
        assert isinstance(app.screen, PromptsPicker) and app.controller.load_prompts == "coding"
        field.value = str(prompts)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, PromptsPicker), what="the picker to close")
        assert app.controller.load_prompts == str(prompts)
        await wait_until(pilot, lambda: any(r["problem"] in ("mine.jsonl:1", "mine.jsonl:2") for r in table.rows),
                         what="requests of the file")
        assert strip.source == "mine.jsonl" and plots.source == "mine.jsonl"
        assert "mine.jsonl" in str(strip.render())  # the strip names the source it measured
        assert "streams of" in str(table.border_subtitle) and "mine.jsonl" in str(table.border_subtitle)
        await app.controller.detach(stop_server=True)
    runs = sorted((state_dir / "runs").glob("*-load"))
    plans = [json.loads((r / "run.json").read_text())["plan"]["prompts"] for r in runs]
    assert plans[0] == "coding" and plans[-1] == str(prompts)
