"""The console's screenshots (the palette's "Screenshot", ``app.screenshot``, ``save_screenshot``) are
written as ddtune writes every file (issue 28, item 1): never through a link, never in a folder
another user rules; a refusal is a notification naming the folder and the fix, and nothing is written."""

from __future__ import annotations

import os

import pytest

from backends.core.writes import UnsafeOutput
from tui.app import DdtuneApp

SPARE = 65534
VICTIM = b"root:x:0:0:root:/root:/bin/bash\n"


async def palette_screenshot(app, pilot) -> None:
    """Run the palette's Screenshot command as the palette does, and wait until it has said something."""
    [command] = [c for c in app.get_system_commands(app.screen) if c.title == "Screenshot"]
    said = len(app.said)
    app.call_later(command.callback)
    for _ in range(100):  # its timer fires 0.1 s later: 3 s at the most
        await pilot.pause(0.03)
        if len(app.said) > said:
            return
    raise AssertionError(f"the screenshot said nothing: {list(app.said)}")


async def test_the_palettes_screenshot_refuses_a_downloads_folder_another_user_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    os.chown(downloads, SPARE, SPARE)
    downloads.chmod(0o777)
    app = DdtuneApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await palette_screenshot(app, pilot)
        said = app.said[-1]
    assert said.startswith("screenshot not saved: folder ") and f"{downloads} is owned by uid {SPARE}" in said, said
    assert "write to a folder of your own" in said
    assert list(downloads.iterdir()) == [] and victim.read_bytes() == VICTIM


async def test_the_palettes_screenshot_is_saved_in_a_folder_of_ours(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "Downloads").mkdir(mode=0o700)
    app = DdtuneApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await palette_screenshot(app, pilot)
        said = app.said[-1]
    [shot] = list((tmp_path / "Downloads").iterdir())
    assert said == f"saved the screenshot to {shot}" and shot.suffix == ".svg"
    assert shot.read_text().startswith("<svg")


async def test_a_named_screenshot_is_never_written_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    (tmp_path / "shot.svg").symlink_to(victim)
    app = DdtuneApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        with pytest.raises(UnsafeOutput):
            app.save_screenshot("shot.svg", str(tmp_path))
        app.action_screenshot("shot.svg", str(tmp_path))  # the action: a notification, never a crash
        said = app.said[-1]
    assert f"{tmp_path / 'shot.svg'} is a symbolic link" in said, said
    assert victim.read_bytes() == VICTIM and (tmp_path / "shot.svg").is_symlink()


async def test_without_a_downloads_folder_the_screenshot_goes_to_the_state_dir_and_says_so(tmp_path, monkeypatch,
                                                                                          state_dir):
    """Issue 32: on a server there is no ~/Downloads; the palette's Screenshot failed there."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    app = DdtuneApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await palette_screenshot(app, pilot)
        said = app.said[-1]
    [shot] = list(state_dir.glob("*.svg"))
    assert said == f"saved the screenshot to {shot} (there is no {tmp_path / 'home' / 'Downloads'})", said
    assert "[" not in said and shot.read_text().startswith("<svg")  # plain text, no markup


async def test_a_screenshot_textual_delivers_is_said_without_markup(tmp_path):
    """Issue 32: the toast read 'Saved screenshot to [$text-success]...' (Textual's own handler says it
    with markup; every notification of the console is plain text)."""
    from textual import events

    app = DdtuneApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        app.post_message(events.DeliveryComplete("key", tmp_path / "shot.svg", "screenshot"))
        await pilot.pause(0.2)
        said = list(app.said)
    assert said == [f"saved the screenshot to {tmp_path / 'shot.svg'}"], said
