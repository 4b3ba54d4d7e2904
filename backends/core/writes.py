"""The one way ddtune writes a file: never through a link, never where another user rules.

As root, ``ddtune sweep --out DIR`` into a folder another user made 0777 would otherwise truncate or
append to whatever that user linked ``slots.jsonl`` or a temp name to (issue 28). So every file
ddtune writes, in the state dir or outside it, goes through here:

- the folder is opened as a directory and checked on the open fd. For the user's files (``--out``,
  runs, reports, screenshots: ``OUTPUT``) every folder from ``/`` down is checked, as whoever rules
  a parent can swap the child: each must be owned by root or the effective user, and writable by
  group or others only with the sticky bit (``/tmp``); a symbolic link on the way is followed only
  when root or the effective user made it. The state dir keeps its own, stricter rules
  (``backends.core.statefs.STATE``);
- a whole file is replaced atomically: a temp file created ``O_EXCL|O_NOFOLLOW`` beside the target,
  written, fsynced, renamed over it (a rename replaces a name, never writes through it), then the
  folder fsynced. A target that is a link or not a regular file is refused, never opened;
- a file written as it grows (``slots.jsonl``, ``responses.jsonl``) is opened
  ``O_APPEND|O_NOFOLLOW`` (``O_CREAT|O_EXCL`` when new) and checked after the open: a regular file
  of the effective user's with one link;
- a refusal is one line naming the folder or file and the fix (exit 2), before anything is
  written; a full or read-only disk is one line too.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from backends.core.datafile import not_regular
from backends.core.errors import DdtuneError, UsageError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
HOPS = 40  # symbolic links followed on the way to one folder, as the kernel allows


class UnsafeOutput(UsageError):
    """A file or folder another user rules, a link, or not a regular file: nothing was written (exit 2)."""


class WriteFailed(DdtuneError):
    """A file could not be written (full disk, read-only, no such folder): nothing half-written.
    ``reason``: the system's words (strerror)."""

    def __init__(self, message: str, hint: str | None = None, *, exit_code: int = 1, reason: str = "") -> None:
        super().__init__(message, hint)
        self.exit_code = exit_code
        self.reason = reason


def who(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (KeyError, ImportError):
        return f"uid {uid}"


@dataclass(frozen=True)
class Place:
    """Where files are written and the rules that hold there: ``OUTPUT`` (the user's folders) or the
    state dir's (``backends.core.statefs.STATE``)."""

    what: str        # how a message names a file here: "output file", "state file"
    mode: int        # a new file's mode, less the umask
    walk: bool       # every folder from / is checked (else the folder itself, as trusted_dir made it)
    folder_ok: Callable[[str, os.stat_result], None]      # raises when another user rules it
    file_ok: Callable[[str, os.stat_result, bool], None]  # (path, stat, appending): raises when not ours
    refused: Callable[[str, str], DdtuneError]            # (message, hint): a refusal
    failed: Callable[[Path, OSError, str], DdtuneError]   # (path, error, verb): a write that failed


def _refused(message: str, hint: str) -> DdtuneError:
    return UnsafeOutput(message, hint=hint)


def _folder_ok(here: str, st: os.stat_result) -> None:
    """A folder only root and the effective user rule (see the module doc)."""
    me = os.geteuid()
    if st.st_uid not in (0, me):
        ours = "root" if me == 0 else f"you ({who(me)}) or root"
        raise UnsafeOutput(f"folder {here} is owned by {who(st.st_uid)}, not by {ours}: ddtune writes nothing "
                           "under it",
                           hint=f"write to a folder of your own (mkdir -m 700 DIR), or run ddtune as {who(st.st_uid)}")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise UnsafeOutput(f"folder {here} is writable by group or others without the sticky bit (mode "
                           f"{stat.S_IMODE(st.st_mode):04o}): ddtune writes nothing under it",
                           hint=f"chmod go-w {here} (or chmod +t {here} for a shared folder), or write to a "
                                "folder of your own")


def _file_ok(path: str, st: os.stat_result, appending: bool) -> None:
    """A file ddtune may replace (root's or ours) or append to (ours, one link)."""
    me = os.geteuid()
    if st.st_uid != me and (appending or st.st_uid != 0):
        raise UnsafeOutput(f"output file {path} is owned by {who(st.st_uid)}, not by you ({who(me)}): "
                           "ddtune will not write to it", hint=f"remove it (rm {path}) or write another file")
    if appending and st.st_nlink != 1:
        raise UnsafeOutput(f"output file {path} has {st.st_nlink} hard links: it is not a file ddtune created",
                           hint=f"remove it (rm {path}) or write another file")


def _failed(path: Path, exc: OSError, verb: str) -> DdtuneError:
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return WriteFailed(f"cannot {verb} {path}: {why} (the disk or quota is full)",
                           hint="free space there, or write to a disk with room", reason=why)
    return WriteFailed(f"cannot {verb} {path}: {why}", hint="write to a folder that exists and that you can write",
                       exit_code=2, reason=why)


OUTPUT = Place("output file", 0o666, True, _folder_ok, _file_ok, _refused, _failed)
PRIVATE = replace(OUTPUT, mode=0o600)  # an output that holds a secret (a systemd drop-in's --api-key)


def _kind(st: os.stat_result) -> str:
    return not_regular(st) or "a file"  # the readers' one table of file kinds (backends.core.datafile)


def _parts(path: str) -> list[str]:
    return [p for p in os.path.normpath(path).split("/") if p]


def _walk(folder: Path, place: Place, missing: str) -> int | None:
    """An fd of ``folder`` reached from / one folder at a time, each checked on its open fd (no
    check-then-use gap). ``missing``: "fail" (FileNotFoundError), "stop" (None: the folders that
    exist are fine) or "make" (made, mode 0777 less the umask)."""
    todo = _parts(os.path.abspath(folder))
    for _ in range(HOPS):
        fd = os.open("/", _DIR)
        try:
            place.folder_ok("/", os.fstat(fd))
            done = ""
            for i, name in enumerate(todo):
                here = f"{done}/{name}"
                st = _entry(fd, name, missing)
                if st is None:
                    os.close(fd)
                    return None
                if stat.S_ISLNK(st.st_mode):
                    if st.st_uid not in (0, os.geteuid()):
                        raise place.refused(f"{here} is a symbolic link owned by {who(st.st_uid)}: ddtune will not "
                                            "follow it", f"give the real path of a folder of your own, not {here}")
                    target = os.readlink(name, dir_fd=fd)
                    todo = _parts(os.path.join(done or "/", target)) + todo[i + 1:]
                    break
                if not stat.S_ISDIR(st.st_mode):
                    raise place.refused(f"{here} is not a folder ({_kind(st)})",
                                        f"give a path under a folder, not {here}")
                child = _open_dir(fd, name, here, place)
                os.close(fd)
                fd = child
                place.folder_ok(here, os.fstat(fd))
                done = here
            else:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise place.refused(f"{folder}: more than {HOPS} symbolic links on the way", "give the folder's real path")


def _entry(fd: int, name: str, missing: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        if missing == "stop":
            return None
        if missing != "make":
            raise
    try:
        os.mkdir(name, 0o777, dir_fd=fd)
    except FileExistsError:
        pass  # made meanwhile: judged below like any other
    return os.stat(name, dir_fd=fd, follow_symlinks=False)


def _open_dir(fd: int, name: str, here: str, place: Place) -> int:
    try:
        return os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped since it was looked at
            raise place.refused(f"{here} changed into a link or a file while ddtune opened it",
                                f"check {here}") from None
        raise


def open_folder(folder: Path, place: Place = OUTPUT, make: bool = False) -> int:
    """An fd of ``folder`` checked by ``place``'s rules (the caller closes it). Raises the place's
    refusal, or its write error (a missing or unreadable folder)."""
    try:
        if place.walk:
            fd = _walk(folder, place, "make" if make else "fail")
            assert fd is not None
            return fd
        fd = os.open(folder, _DIR | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise place.refused(f"{place.what.split()[0]} dir {folder} is a symbolic link: ddtune will not follow it",
                                f"remove it (rm {folder}) if you did not put it there") from None
        raise place.failed(folder, exc, "open") from None
    try:
        place.folder_ok(str(folder), os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_folder(folder: str | Path) -> None:
    """Before a command starts work whose results go under ``folder`` (created later when missing):
    UnsafeOutput when another user rules it or a folder above it (nothing is made or changed)."""
    try:
        fd = _walk(Path(folder).expanduser(), OUTPUT, "stop")
    except OSError as exc:
        raise _failed(Path(folder), exc, "open") from None
    if fd is not None:
        os.close(fd)


def make_folder(folder: str | Path) -> Path:
    """``folder`` and the folders above it that are missing, made (0777 less the umask) and checked."""
    path = Path(folder).expanduser()
    os.close(open_folder(path, OUTPUT, make=True))
    return path


def _target(fd: int, path: Path, place: Place) -> os.stat_result | None:
    """What a write would replace or extend: nothing (None), or a regular file the place allows. Never opened."""
    try:
        st = os.stat(path.name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise place.refused(f"{place.what} {path} is a symbolic link: ddtune will not follow or replace it",
                            f"remove it (rm {path}) if you did not put it there")
    if not stat.S_ISREG(st.st_mode):
        raise place.refused(f"{place.what} {path} is {_kind(st)}, not a regular file: ddtune will not "
                            "write to it", f"give the path of a new or regular file, not {path}")
    place.file_ok(str(path), st, False)
    return st


def check_output(path: str | Path) -> None:
    """Before a command starts work it will write to ``path`` (``--out FILE``): refused now, with
    nothing done, when the write would be (a link, not a regular file, another user's folder)."""
    path = Path(path).expanduser()
    fd = open_folder(path.parent, OUTPUT)
    try:
        _target(fd, path, OUTPUT)
    finally:
        os.close(fd)


def write_atomic(path: str | Path, data: bytes | str, place: Place = OUTPUT) -> None:
    """Replace ``path`` by ``data`` all at once: a reader sees the old file or the new one, and a
    crash leaves one of them (see the module doc)."""
    path = Path(path).expanduser()
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd = open_folder(path.parent, place)
    try:
        old = _target(fd, path, place)
        tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            out = os.open(tmp, _NEW, place.mode, dir_fd=fd)
        except OSError as exc:
            raise place.failed(path, exc, "write") from None
        try:
            try:
                if old is not None:  # a replaced file keeps its mode, never more open than the place's
                    os.fchmod(out, stat.S_IMODE(old.st_mode) & place.mode & ~0o022)
                _write_all(out, raw)
                os.fsync(out)
            finally:
                os.close(out)
            os.rename(tmp, path.name, src_dir_fd=fd, dst_dir_fd=fd)
            _sync(fd)
        except BaseException as exc:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise place.failed(path, exc, "write") from None
            raise
    finally:
        os.close(fd)


def open_append(path: str | Path, place: Place = OUTPUT, *, create: bool = True, read: bool = False,
                new: bool = False) -> int:
    """An fd that appends to ``path`` (read too with ``read``), made when missing unless ``create`` is
    False (FileNotFoundError then); ``new``: only a file made now (FileExistsError otherwise: a
    server's log holds one launch). Never through a link, never a FIFO or device (which an open
    could block on or act on), and only a regular file of ours with one link."""
    path = Path(path).expanduser()
    fd = open_folder(path.parent, place)
    try:
        flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        while True:
            if not new:
                _target(fd, path, place)  # a link or a FIFO is refused before any open
                try:
                    out = os.open(path.name, flags, dir_fd=fd)
                    break
                except FileNotFoundError:
                    if not create:
                        raise
                except OSError as exc:
                    raise _open_error(path, exc, place) from None
            try:
                out = os.open(path.name, flags | os.O_CREAT | os.O_EXCL, place.mode, dir_fd=fd)
                break
            except FileExistsError:
                if new:
                    raise
                continue  # made meanwhile: judged again
            except OSError as exc:
                raise place.failed(path, exc, "create") from None
    finally:
        os.close(fd)
    try:
        st = os.fstat(out)
        if not stat.S_ISREG(st.st_mode):
            raise place.refused(f"{place.what} {path} is {_kind(st)}, not a regular file",
                                f"remove it (rm {path}) if you did not put it there")
        place.file_ok(str(path), st, True)
        os.set_blocking(out, True)
    except BaseException:
        os.close(out)
        raise
    return out


def _open_error(path: Path, exc: OSError, place: Place) -> DdtuneError:
    if exc.errno == errno.ELOOP:
        return place.refused(f"{place.what} {path} is a symbolic link: ddtune will not follow it",
                             f"remove it (rm {path}) if you did not put it there")
    return place.failed(path, exc, "open")


def append_text(path: str | Path, text: str, place: Place = OUTPUT, *, sync: bool = True) -> None:
    """Append ``text`` to ``path`` (see ``open_append``); durable once this returns unless ``sync`` is False."""
    fd = open_append(path, place)
    try:
        _write_all(fd, text.encode("utf-8"))
        if sync:
            os.fsync(fd)
    except OSError as exc:
        raise place.failed(Path(path), exc, "append to") from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _sync(fd: int) -> None:
    """The rename itself durable. Some filesystems cannot fsync a folder (EINVAL): nothing to do there."""
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
