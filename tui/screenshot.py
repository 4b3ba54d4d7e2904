"""Screenshots of the console (the palette's "Save screenshot", ``app.screenshot``, the scripts'
``save_screenshot``), written the way ddtune writes every file: never through a link, never in a
folder another user rules (backends.core.writes). Textual's own writers open the path plainly."""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import App


def write_screenshot(app: App, filename: str | None, folder: str | Path) -> Path:
    """The screen as SVG in ``folder`` (``filename``, else ``<title>_<time>.svg``). Raises DdtuneError
    (one line naming the file or folder and the fix) when it may not or cannot be written."""
    from backends.core import write_atomic

    name = filename or f"{app.title}_{time.strftime('%Y-%m-%dT%H_%M_%S')}.svg"
    target = Path(folder).expanduser() / name
    write_atomic(target, app.export_screenshot())
    return target


def deliver_screenshot(app: App, filename: str | None, folder: str | Path | None) -> str | None:
    """What the palette's command does: save to ``folder`` (else the Downloads folder, as Textual
    does, or ddtune's state dir where there is no Downloads folder, as on most servers) and say
    where, or why not, in a plain-text notification."""
    from platformdirs import user_downloads_path

    from backends.core import DdtuneError, state_dir

    why = ""
    try:
        if folder is None:
            folder = user_downloads_path()
            if not folder.is_dir():
                why, folder = f" (there is no {folder})", state_dir()
        target = write_screenshot(app, filename, folder)
    except DdtuneError as exc:
        app.notify(f"screenshot not saved: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""),
                   title="Screenshot", severity="error", timeout=10)
        return None
    app.notify(f"saved the screenshot to {target}{why}", title="Screenshot", timeout=6)
    return str(target)
