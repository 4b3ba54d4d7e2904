"""Screenshots of the console (the palette's "Save screenshot", ``app.screenshot``, the scripts'
``save_screenshot``), written the way ddtune writes every file: never through a link, never in a
folder another user rules (backends.core.writes). Textual's own writers open the path plainly."""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import App


def write_screenshot(app: App, filename: str | None, folder: str | Path | None) -> Path:
    """The screen as SVG in ``folder`` (``filename``, else ``<title>_<time>.svg``; no folder: the
    Downloads folder, else the state dir). Raises DdtuneError (one line naming the file or folder
    and the fix) when it may not or cannot be written."""
    return _save(app, filename, folder)[0]


def _save(app: App, filename: str | None, folder: str | Path | None) -> tuple[Path, str]:
    from backends.core import save_export

    name = filename or f"{app.title}_{time.strftime('%Y-%m-%dT%H_%M_%S')}.svg"
    return save_export(app.export_screenshot(), name, folder)


def deliver_screenshot(app: App, filename: str | None, folder: str | Path | None) -> str | None:
    """What the palette's command does: save to ``folder`` (else the Downloads folder, as Textual
    does, or ddtune's state dir where there is no Downloads folder, as on most servers) and say
    where, or why not, in a plain-text notification."""
    from backends.core import DdtuneError

    try:
        target, why = _save(app, filename, folder)
    except DdtuneError as exc:
        app.notify(f"screenshot not saved: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""),
                   title="Screenshot", severity="error", timeout=10)
        return None
    app.notify(f"saved the screenshot to {target}{why}", title="Screenshot", timeout=6)
    return str(target)
