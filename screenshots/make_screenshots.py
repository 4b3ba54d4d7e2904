"""Screenshots of the console: each named scene runs headless, is saved as SVG, then converted to PNG.

    python screenshots/make_screenshots.py --list             # the registered scenes
    python screenshots/make_screenshots.py                    # every scene, into screenshots/
    python screenshots/make_screenshots.py standin --out /tmp/shots --zoom 2

A scene is a name, a terminal size, a factory for the app and an async setup that drives it with
Textual's Pilot (press keys, wait for data) before the shot. Add scenes for the real console with
``@scene(...)`` below; keep every input fixed (simulator seed, theme, size) so shots are repeatable.
PNGs come from ``rsvg-convert`` (Debian/Ubuntu: apt-get install -y librsvg2-bin).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

THEME = "textual-dark"
RSVG_HINT = "rsvg-convert not found: install it (Debian/Ubuntu: apt-get install -y librsvg2-bin), or pass --svg-only"


@dataclass(frozen=True)
class Scene:
    name: str
    size: tuple[int, int]  # columns, rows
    make_app: Callable[[], object]  # returns a textual App; imported lazily so --list stays cheap
    setup: Callable[[object], Awaitable[None]]  # async setup(pilot): bring the app to the moment of the shot
    about: str = ""


SCENES: dict[str, Scene] = {}


def scene(name: str, size: tuple[int, int], app: Callable[[], object], about: str = ""):
    """Register ``async def setup(pilot)`` as the scene ``name``."""
    def register(setup: Callable[[object], Awaitable[None]]):
        if name in SCENES:
            raise ValueError(f"scene {name!r} is registered twice")
        SCENES[name] = Scene(name, size, app, setup, about)
        return setup
    return register


# --- scenes -------------------------------------------------------------------------------------------
# The real console on the simulator, in a private state dir and on a free port; the server it starts is
# stopped after the shot.

def _console_app(extra: tuple[str, ...] = ("--sim-load-seconds", "2"), knob_map: str = "",
                 knobs: str = "window = 2048"):
    def make():
        import socket
        import tempfile

        from backends.knobs.config import load_config
        from tui.app import DdtuneApp
        from tui.controller import ConsoleController

        root = tempfile.mkdtemp(prefix="ddtune-shots-")
        # a home of its own, the state where a user's would be: the shots show ~/.local/state/ddtune/...,
        # what an operator sees, and no path of the machine that made them
        os.environ["HOME"] = root
        os.environ["DDTUNE_STATE_DIR"] = os.path.join(root, ".local", "state", "ddtune")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        path = os.path.join(root, "ddtune.toml")
        with open(path, "w") as fh:
            fh.write(f'[server]\nbackend = "sim"\nport = {port}\nextra_args = {list(extra)!r}\n'
                     f"[knobs]\n{knobs}\n{knob_map}")
        return DdtuneApp(ConsoleController(load_config(path), simulated=True), note="no config found: "
                         "running the built-in SGLang simulator")
    return make


async def _until(pilot, predicate, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("scene timed out")
        await pilot.pause(0.1)


def _phase(pilot) -> str:
    from tui.widgets.server_panel import ServerPanel

    return pilot.app.main.query_one(ServerPanel).view.phase


def _requests(pilot) -> int:
    from tui.widgets.requests_table import RequestsTable

    return pilot.app.main.query_one(RequestsTable).total


@scene("startup", size=(160, 50), app=_console_app(("--sim-load-seconds", "12")),
       about="the simulator loading weights: phase, shard progress, log tail")
async def _startup(pilot) -> None:
    await _until(pilot, lambda: _phase(pilot) == "loading-weights")
    await pilot.pause(2.5)


def _comparison(pilot):
    from tui.widgets.ab_strip import ABStrip

    return pilot.app.main.query_one(ABStrip).comparison


async def _ab(pilot, windows: int = 3) -> None:
    """Load on, a few windows at window=2048, Apply window=1024, a few windows more: the A/B."""
    await _until(pilot, lambda: _phase(pilot) == "ready")
    await pilot.press("l")
    await _until(pilot, lambda: (c := _comparison(pilot)) is not None and c.current.windows >= windows, 120)
    pid = pilot.app.controller.view().pid
    pilot.app.controller.restart_with({"window": 1024})
    await _until(pilot, lambda: _phase(pilot) == "ready" and pilot.app.controller.view().pid != pid, 120)
    await _until(pilot, lambda: (c := _comparison(pilot)) is not None and c.reference is not None
                 and c.current.windows >= windows, 120)
    await pilot.pause(2.5)  # the plots redraw on every second tick


@scene("live", size=(160, 50), app=_console_app(),
       about="coding load running, then Apply window=1024: plots with the marker, the A/B strip, verdicts")
async def _live(pilot) -> None:
    await _ab(pilot)


@scene("live-80x24", size=(80, 24), app=_console_app(), about="the same at 80x24 (the A/B in one line)")
async def _live_small(pilot) -> None:
    await _ab(pilot)


@scene("knob-editor", size=(120, 36), app=_console_app(), about="editing the window: validated as you type")
async def _knobs(pilot) -> None:
    await _until(pilot, lambda: _phase(pilot) == "ready")
    await pilot.press("k")
    await pilot.pause(0.3)
    pilot.app.screen.query_one("#knob-window").value = "8"
    await pilot.pause(0.3)


@scene("mismatch", size=(120, 36), app=_console_app(knob_map='[knobs.map]\nwindow = { env = "DDTUNE_DEMO_IGNORED" }\n'),
       about="a window knob the server silently ignores: requested 2048, server says None")
async def _mismatch(pilot) -> None:
    await _until(pilot, lambda: _phase(pilot) == "ready")
    await pilot.pause(1.0)


@scene("sweep", size=(140, 36), app=_console_app(),
       about="a quick sweep from the console: runs fill in, the winner is named")
async def _sweep(pilot) -> None:
    from textual.widgets import Static

    from tui.screens.sweep import SweepScreen

    await _until(pilot, lambda: _phase(pilot) == "ready")
    screen = SweepScreen(pilot.app.controller, ["b4-t4-w2048", "b8-t4-w2048", "b16-t4-w2048"], contexts=[60, 1024],
                         concurrency=[1, 8], max_tokens=96)
    pilot.app.push_screen(screen)
    await pilot.pause()
    await pilot.click("#start")
    status = screen.query_one("#status", Static)
    await _until(pilot, lambda: "best overall" in str(status.render()) or "finished" in str(status.render()), 240)
    await pilot.pause(0.5)


@scene("search", size=(140, 36), app=_console_app(),
       about="a knob search from the console (S): rounds, the measured table, the best and its ddtune up line")
async def _search(pilot) -> None:
    from tui.screens.search import SearchScreen
    from workloads.search import SearchRequest

    await _until(pilot, lambda: _phase(pilot) == "ready")
    request = SearchRequest("budget=4,8,16 topk=2,4", target_context=1024, target_concurrency=4, max_tokens=64,
                            waves=2, rungs=2)
    screen = SearchScreen(pilot.app.controller, request.space, request)
    pilot.app.push_screen(screen)
    await pilot.pause()
    await pilot.click("#start")
    await _until(pilot, lambda: screen.search is not None, 10)
    await _until(pilot, lambda: screen.search is None, 240)  # done, and the server back on its config
    pilot.app.clear_notifications()
    await pilot.pause(0.5)


# --- standin: the harness's own check (tests/e2e/test_screenshot_script.py) -----------------------------

def _standin_app():
    from tests.e2e.standin_app import StandinApp

    return StandinApp()


@scene("standin", size=(80, 24), app=_standin_app, about="harness self-test: the stand-in app (not for the README)")
async def _standin(pilot) -> None:
    await pilot.press("n", "n", "n")


# --- running ------------------------------------------------------------------------------------------

async def shoot(one: Scene, out_dir: str) -> str:
    """Run one scene headless at its size and save its SVG; return the SVG's path."""
    app = one.make_app()
    async with app.run_test(size=one.size) as pilot:
        app.theme = THEME
        await pilot.pause()
        try:
            await one.setup(pilot)
            await pilot.pause()
            return app.save_screenshot(filename=f"{one.name}.svg", path=out_dir)
        finally:
            controller = getattr(app, "controller", None)
            if controller is not None:  # never leave the scene's server running
                await controller.detach(stop_server=True)


def to_png(svg: str, zoom: float) -> str:
    png = svg.removesuffix(".svg") + ".png"
    subprocess.run(["rsvg-convert", "--zoom", str(zoom), "--format", "png", "--output", png, svg],
                   check=True, capture_output=True, timeout=120)
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("scenes", nargs="*", metavar="SCENE", help="scenes to shoot (default: all)")
    parser.add_argument("--out", default=HERE, help="output folder (default: this screenshots/ folder)")
    parser.add_argument("--zoom", type=float, default=1.0, help="PNG scale factor for rsvg-convert (default 1)")
    parser.add_argument("--svg-only", action="store_true", help="write the SVGs and skip the PNGs")
    parser.add_argument("--list", action="store_true", help="list the scenes and exit")
    args = parser.parse_args(argv)
    if args.list:
        for one in SCENES.values():
            print(f"{one.name:20} {one.size[0]}x{one.size[1]}  {one.about}")
        return 0
    unknown = [name for name in args.scenes if name not in SCENES]
    if unknown:
        parser.error(f"unknown scene(s) {', '.join(unknown)}; known: {', '.join(SCENES)}")
    if not args.svg_only and shutil.which("rsvg-convert") is None:
        print(f"make_screenshots: {RSVG_HINT}", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    for name in args.scenes or [name for name in SCENES if name != "standin"]:
        svg = asyncio.run(shoot(SCENES[name], args.out))
        print(svg if args.svg_only else f"{svg}\n{to_png(svg, args.zoom)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
