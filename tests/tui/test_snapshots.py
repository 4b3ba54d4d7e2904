"""SVG snapshots of the main screen at 80x24, 160x50 and 200x50 with every input fixed."""

import pytest

from tests.tui.fixtures import (
    EIGHT_GPUS, FAILED, LANE_GPUS, LOADING, NO_GPU, READY, READY_MISMATCH, RESTARTING, feed,
)
from tui.app import DdtuneApp


async def _settle(pilot):
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    pilot.app.main.query_one("#requests").flush()
    plots = pilot.app.main.query_one("#plots")
    plots.redraw()
    await pilot.pause()


@pytest.mark.parametrize("size,server,gpu,load,ab", [
    ((80, 24), LOADING, NO_GPU, False, False),
    ((80, 24), READY, EIGHT_GPUS, False, False),
    ((80, 24), RESTARTING, NO_GPU, False, False),
    ((80, 24), READY_MISMATCH, EIGHT_GPUS, False, False),
    ((80, 24), FAILED, NO_GPU, False, False),
    ((80, 24), READY, EIGHT_GPUS, True, False),
    ((160, 50), READY_MISMATCH, EIGHT_GPUS, True, False),
    ((200, 50), READY, EIGHT_GPUS, True, True),
    ((80, 24), READY, EIGHT_GPUS, True, True),
    ((160, 50), READY, LANE_GPUS, True, False),
    ((80, 24), READY, LANE_GPUS, False, False),
], ids=["80x24-loading-nogpu", "80x24-ready-8gpu", "80x24-restarting", "80x24-mismatch", "80x24-failed",
        "80x24-load-running", "160x50-ready-mismatch-8gpu", "200x50-ab-strip", "80x24-ab-strip", "160x50-lanes",
        "80x24-lanes"])
def test_main_screen(snap_compare, size, server, gpu, load, ab):
    """Every state an operator meets, at 80x24 and wide: the phase, the knobs (requested and what
    the server says), the GPU line and the log tail are on screen in each. With the A/B: the marker
    labelled with the change on both plots and the strip under them (one line at 80x24); at 200x50
    also the no-speculation reference line. With a parallel sweep's lanes beside the console's server:
    their memory in its own colour on their GPUs and one line per lane server naming its pid."""
    async def run_before(pilot):
        feed(pilot.app.main, server=server, gpu=gpu, points=40 if load else 0, requests=12 if load else 0, ab=ab,
             no_spec=ab and size[0] > 80)
        await _settle(pilot)

    assert snap_compare(DdtuneApp(), terminal_size=size, run_before=run_before)


def test_help_scrolls_at_80x24(snap_compare):
    async def run_before(pilot):
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("end")  # the last rows of the key table are reachable
        await pilot.pause()

    assert snap_compare(DdtuneApp(), terminal_size=(80, 24), run_before=run_before)
