"""The state dir as something ddtune can trust, and the only way ddtune touches files in it.

A state dir another user owns, or one anybody may write to, lets that user plant a symlink
(``lifecycle.lock -> /etc/passwd``) or a forged record; as root ddtune would then truncate or
append to the target, or signal what the record names. So:

- the dir must be a real directory (not a symlink) owned by the effective user and writable by
  nobody else (group/other write refused; other read bits are tightened to 0700);
- every state file is opened with ``O_NOFOLLOW`` and must be a regular file owned by the
  effective user, writable by nobody else, with one link (a hard link to a file elsewhere is not
  a file ddtune created);
- records are written atomically: a temp file created ``O_EXCL`` 0600 in the dir, then renamed
  over the old one (a rename replaces a link itself, never its target), after checking that what
  it replaces is a state file of ours; lines are appended the same careful way. Both are
  backends.core.writes, the one writer of every file, under the rules above (``STATE``);
- a dir or disk that cannot be written (read-only, full) is one error naming the file and the fix.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from backends.core import writes
from backends.core.errors import ConfigError, ServerError
from backends.core.writes import who as _who

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
MAX_STATE_BYTES = 4 * 1024**2  # server.json, launch.json, a cached --help: a few KB to ~100 KB
_FIX_DIR = "point DDTUNE_STATE_DIR at a directory of your own (mkdir -m 700 DIR), or fix this one's owner and mode"


class UntrustedState(ConfigError):
    """The state dir, or a file in it, is not one only this user controls (exit 2): nothing was written."""


class StateWriteError(ServerError):
    """A state file could not be written (full disk, read-only dir): nothing was launched on it."""

    def __init__(self, message: str, hint: str | None = None, *, exit_code: int = 1) -> None:
        super().__init__(message, hint)
        self.exit_code = exit_code


def _check_mode(path: Path, st: os.stat_result, kind: str) -> None:
    me = os.geteuid()
    if st.st_uid != me:
        raise UntrustedState(f"state {kind} {path} is owned by {_who(st.st_uid)}, not by you ({_who(me)}): "
                             "ddtune will not use it", hint=_FIX_DIR)
    if st.st_mode & 0o022:
        raise UntrustedState(f"state {kind} {path} is writable by group or others (mode "
                             f"{stat.S_IMODE(st.st_mode):04o}): ddtune will not use it",
                             hint=f"chmod 700 {path.parent if kind == 'file' else path}, remove what you did "
                                  f"not put there, or {_FIX_DIR.split(', or ')[0]}")


def trusted_dir(path: Path, create: bool = True) -> Path:
    """``path`` as a state dir ddtune may use: created 0700 if missing, else checked (see module doc).
    Raises UntrustedState (never follows a symlinked dir) or StateWriteError (cannot create it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _write_error(path, exc, "create") from None
        st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UntrustedState(f"state dir {path} is a symbolic link: ddtune will not follow it",
                             hint=f"point DDTUNE_STATE_DIR at the real directory ({os.path.realpath(path)}) "
                                  "if it is yours")
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedState(f"state dir {path} is not a directory", hint=_FIX_DIR)
    _check_mode(path, st, "dir")
    if st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700, follow_symlinks=False)
        except OSError:
            pass  # read-only: writes will say so
    return path


def check_file(path: Path, fd: int) -> os.stat_result:
    """Refuse an open state file that is not a plain, single-link file of ours."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UntrustedState(f"state file {path} is not a regular file: ddtune will not use it",
                             hint=f"remove it (rm {path}) if you did not put it there")
    _state_file_ok(str(path), st, True)
    return st


def _state_file_ok(path: str, st: os.stat_result, single: bool) -> None:
    """A state file of ours that nobody else may write; ``single``: with one link (one ddtune made)."""
    _check_mode(Path(path), st, "file")
    if single and st.st_nlink != 1:
        raise UntrustedState(f"state file {path} has {st.st_nlink} hard links: it is not a file ddtune created",
                             hint=f"remove it (rm {path}); ddtune writes a fresh one")


def open_state(path: Path, flags: int, mode: int = 0o600) -> int:
    """os.open without following a symlink, then checked (check_file). The caller closes the fd."""
    try:
        fd = os.open(path, flags | _NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedState(f"state file {path} is a symbolic link: ddtune will not follow it",
                                 hint=f"remove it (rm {path}) if you did not put it there") from None
        if isinstance(exc, FileNotFoundError):
            raise
        raise _write_error(path, exc, "open") from None
    try:
        check_file(path, fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_state_for_reading(path: Path) -> int | None:
    """A state file opened to read (``O_NONBLOCK``: a FIFO planted there cannot block the open; the
    checks then refuse it), or None when it does not exist. Refuses a link or a file not ours."""
    try:
        return open_state(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None


def read_state_file(path: Path, max_bytes: int = MAX_STATE_BYTES) -> bytes | None:
    """The file's bytes, or None when it does not exist. Refuses a link or a file not ours; a file
    over ``max_bytes`` is an OSError (EFBIG) naming the limit, never read whole."""
    fd = open_state_for_reading(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than the {max_bytes // 1024**2} MiB ddtune reads from a state file")
    return data


def write_atomic(path: Path, data: bytes) -> None:
    """Replace the state file ``path`` by ``data`` all at once (a reader sees the old file or the new
    one): backends.core.writes, under the state dir's rules."""
    writes.write_atomic(path, data, STATE)


def append_line(path: Path, line: str) -> None:
    """Append one line to a state file of ours (created 0600 if missing)."""
    writes.append_text(path, line, STATE, sync=False)


def probe_room(path: Path, data: bytes) -> None:
    """Write ``data`` to the state file ``path`` and remove it again: proof that the dir takes a file
    of that size now (writable, room), else StateWriteError (or UntrustedState)."""
    write_atomic(path, data)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _write_error(path: Path, exc: OSError, verb: str) -> StateWriteError:
    """A state file that could not be written: exit 2 where the user must point elsewhere, else 1."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StateWriteError(f"cannot {verb} state file {path}: {why} (the disk or quota is full)",
                               hint="free space there, or point DDTUNE_STATE_DIR at a disk with room")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StateWriteError(f"cannot {verb} state file {path}: {why}",
                               hint="point DDTUNE_STATE_DIR at a writable directory of your own", exit_code=2)
    return StateWriteError(f"cannot {verb} state file {path}: {why}", hint="check the state dir and its disk")


# The state dir's rules for backends.core.writes: the dir itself as trusted_dir checked it (no walk
# from /: an existing state dir's parents were never judged), files owned by us and nobody else's to write.
STATE = writes.Place("state file", 0o600, False, lambda here, st: _check_mode(Path(here), st, "dir"),
                     _state_file_ok, lambda message, hint: UntrustedState(message, hint=hint), _write_error)
