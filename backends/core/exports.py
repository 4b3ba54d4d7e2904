"""A file the user asked ddtune to save for them (a console screenshot), written the way ddtune
writes every file: never through a link, never in a folder another user rules (backends.core.writes)."""

from __future__ import annotations

from pathlib import Path


def save_export(data: str | bytes, name: str, folder: str | Path | None = None) -> tuple[Path, str]:
    """Write ``data`` as ``name`` in ``folder``, else in the Downloads folder (as Textual does), else
    in ddtune's state dir where there is no Downloads folder (most servers). Returns the path and, when
    the state dir was used for want of Downloads, why (`` (there is no ...)``, else ""). Raises
    DdtuneError (one line naming the file or folder and the fix) when it may not or cannot be written."""
    from backends.core.paths import state_dir
    from backends.core.writes import write_atomic

    why = ""
    if folder is None:
        from platformdirs import user_downloads_path

        folder = user_downloads_path()
        if not folder.is_dir():
            why, folder = f" (there is no {folder})", state_dir()
    target = Path(folder).expanduser() / name
    write_atomic(target, data)
    return target, why
