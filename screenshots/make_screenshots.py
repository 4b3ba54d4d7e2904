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
# A stand-in until the console lands: replace it with scenes of tui.app.DdtuneApp on the simulator.

def _standin_app():
    from tests.e2e.standin_app import StandinApp

    return StandinApp()


@scene("standin", size=(80, 24), app=_standin_app, about="the stand-in Textual app after three presses of n")
async def _standin(pilot) -> None:
    await pilot.press("n", "n", "n")


# --- running ------------------------------------------------------------------------------------------

async def shoot(one: Scene, out_dir: str) -> str:
    """Run one scene headless at its size and save its SVG; return the SVG's path."""
    app = one.make_app()
    async with app.run_test(size=one.size) as pilot:
        app.theme = THEME
        await pilot.pause()
        await one.setup(pilot)
        await pilot.pause()
        return app.save_screenshot(filename=f"{one.name}.svg", path=out_dir)


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
    for name in args.scenes or list(SCENES):
        svg = asyncio.run(shoot(SCENES[name], args.out))
        print(svg if args.svg_only else f"{svg}\n{to_png(svg, args.zoom)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
