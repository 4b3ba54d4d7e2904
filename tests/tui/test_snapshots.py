"""SVG snapshots of the main screen at 80x24 and 160x50 with every input fixed."""

import pytest

from tests.tui.fixtures import EIGHT_GPUS, LOADING, NO_GPU, READY_MISMATCH, feed
from tui.app import DdtuneApp


async def _settle(pilot):
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    pilot.app.main.query_one("#requests").flush()
    plots = pilot.app.main.query_one("#plots")
    plots.redraw()
    await pilot.pause()


@pytest.mark.parametrize("size,server,gpu", [
    ((80, 24), LOADING, NO_GPU),
    ((160, 50), READY_MISMATCH, EIGHT_GPUS),
], ids=["80x24-loading-nogpu", "160x50-ready-mismatch-8gpu"])
def test_main_screen(snap_compare, size, server, gpu):
    async def run_before(pilot):
        feed(pilot.app.main, server=server, gpu=gpu)
        await _settle(pilot)

    assert snap_compare(DdtuneApp(), terminal_size=size, run_before=run_before)
