"""screenshots/make_screenshots.py on its stand-in scene: a real headless Textual run, SVG, then PNG."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tests.helpers import REPO, ddtune_env

SCRIPT = [sys.executable, str(REPO / "screenshots" / "make_screenshots.py")]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args: str, env=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SCRIPT, *args], env=env or ddtune_env(), cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_standin_scene_makes_svg_and_png(tmp_path):
    out = run("standin", "--out", str(tmp_path))
    if shutil.which("rsvg-convert") is None:  # a fresh machine: the script must say what to install
        assert out.returncode == 1 and "apt-get install -y librsvg2-bin" in out.stderr
        out = run("standin", "--out", str(tmp_path), "--svg-only")
        assert out.returncode == 0, out.stderr
        assert (tmp_path / "standin.svg").exists() and not (tmp_path / "standin.png").exists()
        return
    assert out.returncode == 0, out.stderr
    svg, png = tmp_path / "standin.svg", tmp_path / "standin.png"
    assert out.stdout.split() == [str(svg), str(png)]
    text = svg.read_text().replace("&#160;", " ")  # Rich's SVG writes spaces as no-break spaces
    assert "ddtune stand-in" in text
    assert "count: 3" in text
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_list_and_unknown_scene():
    listed = run("--list")
    assert listed.returncode == 0
    assert "standin " in listed.stdout and "live " in listed.stdout
    assert "80x24" in listed.stdout
    wrong = run("no-such-scene")
    assert wrong.returncode == 2
    assert "unknown scene(s) no-such-scene; known: startup, live" in wrong.stderr


def test_missing_rsvg_convert_says_what_to_install(tmp_path):
    env = ddtune_env(PATH=str(tmp_path))  # the interpreter is called by full path, so only rsvg-convert is lost
    out = run("standin", "--out", str(tmp_path / "shots"), env=env)
    assert out.returncode == 1
    assert "apt-get install -y librsvg2-bin" in out.stderr
    svg_only = run("standin", "--out", str(tmp_path / "shots"), "--svg-only", env=env)
    assert svg_only.returncode == 0, svg_only.stderr
    assert (tmp_path / "shots" / "standin.svg").exists()
    assert not (tmp_path / "shots" / "standin.png").exists()

