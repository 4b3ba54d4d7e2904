"""The one door every file ddtune reads comes through: the user's (config, presets, plans, problems,
run records, baselines, server logs) and its own state files.

What the door holds, so no caller needs its own try/except and no file can stall, exhaust or crash
ddtune:

- **Type first.** Only a regular file is read. A FIFO (a read would wait for ever for a writer), a
  device (``/dev/zero`` never ends), a socket or a directory is refused by its type before it is
  opened (``stat``), and again on the very file opened (``fstat``; opened ``O_NONBLOCK``, so not even
  a FIFO swapped in meanwhile can block the open). A file of the kernel's own filesystems (``/proc``,
  ``/sys``, cgroup, debugfs, ...: ``/proc/self/mem``, ``/proc/kcore``) is refused by the mount it is
  on: such files are not data, some never end, some change as they are read.
- **Size.** A file over its kind's limit is refused before a byte is read (``read_text``), or read up
  to the limit where part of it serves better than nothing (``Lines`` with ``over="head"`` or
  ``"tail"``: the caller says so in a note).
- **Lines.** Line-per-record files are streamed (``Lines``, ``read_jsonl``), never held whole; a
  line over its limit is skipped and counted (its number is in ``long_lines``), never held.
- **Content.** UTF-8 only; JSON nested past ``MAX_DEPTH`` is an error, never a RecursionError.

Every way a file can be unreadable is one error naming the file and saying what to do. The error
class is the caller's: ConfigError for config-like files, UsageError for files named on the command
line (both exit 2).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from backends.core.errors import ConfigError, DdtuneError

MIB = 1024**2
MAX_DEPTH = 100            # JSON nesting: what ddtune writes stays under 10 levels
MAX_BYTES = 512 * MIB      # a run record file (a long run's responses.jsonl stays well under)
MAX_LINE = 16 * MIB        # one JSON-lines record (an answer of 128k tokens is about 1 MB)
MAX_TOML_BYTES = 16 * MIB  # config, presets, plans: a few KB
CHUNK = MIB
Note = Callable[[str], None]
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_HINT = "check the path and its permissions"
_REGULAR_ONLY = ("give the path of the file itself: ddtune reads only regular files (never a pipe, a device, "
                 "a socket, or a file of /proc or /sys)")
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
# the kernel's own filesystems: their "files" are views of the kernel, not data
KERNEL_FS = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs", "bpf",
                       "pstore", "efivarfs", "fusectl", "binfmt_misc", "mqueue", "devpts", "nsfs", "selinuxfs",
                       "rpc_pipefs"})


class TooDeep(ValueError):
    """JSON nested deeper than ``MAX_DEPTH`` (a ValueError, like every other JSON that is unusable)."""


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` for data from a file: nesting past ``max_depth`` levels is a ``TooDeep``
    error (a ValueError), never a RecursionError here or in whatever walks the value later."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"nested more than {max_depth} levels deep") from None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise TooDeep(f"nested more than {max_depth} levels deep")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return value


def size_text(size: int) -> str:
    """Bytes for a message: 512 MiB, 4.0 GiB, 300 KiB."""
    for unit, scale in (("GiB", 1024**3), ("MiB", MIB), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}" if size % scale else f"{size // scale} {unit}"
    return f"{size} bytes"


def not_regular(st: os.stat_result) -> str | None:
    """What a file of this type is, when it is not a regular file (None when it is)."""
    for test, what in _KINDS:
        if test(st.st_mode):
            return what
    return None if stat.S_ISREG(st.st_mode) else "not a regular file"


def kernel_fs(fd: int) -> str | None:
    """The kernel filesystem (proc, sysfs, ...) the open file ``fd`` lives on; None for any other,
    or when /proc cannot say. The mount is looked up by the open file's own mount id, so a second
    /proc mounted elsewhere, or a bind mount of one of its files, is found as well."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", "rb") as fh:
            mount = next(line.split()[1] for line in fh.read(4096).splitlines() if line.startswith(b"mnt_id:"))
        with open("/proc/self/mountinfo", "rb") as fh:
            table = fh.read(4 * MIB)
    except (OSError, StopIteration, IndexError):
        return None
    for line in table.splitlines():
        fields = line.split()
        if fields and fields[0] == mount and b"-" in fields[6:]:
            fstype = fields[fields.index(b"-", 6) + 1].decode("ascii", "replace")
            return fstype if fstype in KERNEL_FS else None
    return None


def check_open(fd: int, label: str, error: type[DdtuneError] = ConfigError,
               hint: str = _REGULAR_ONLY) -> os.stat_result:
    """The open file's stat, once it is proven a regular file outside the kernel's filesystems."""
    st = os.fstat(fd)
    what = not_regular(st)
    if what is None and (fs := kernel_fs(fd)) is not None:
        what = f"a file of the kernel's {fs} filesystem"
    if what is not None:
        raise error(f"{label}: is {what}, not a regular file", hint=hint)
    return st


def open_regular(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
                 hint: str = _HINT) -> tuple[int, os.stat_result]:
    """``path`` opened read-only once it is proven a regular file (see the module doc): (fd, stat).
    The caller closes the fd."""
    label = name or str(path)
    try:
        what = not_regular(os.stat(path))
        if what == "a directory":
            raise error(f"{label}: is a directory, not a file", hint=hint)
        if what is not None:
            raise error(f"{label}: is {what}, not a regular file", hint=_REGULAR_ONLY)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{label}: no such file", hint=hint) from None
    except OSError as exc:
        raise error(f"{label}: cannot read it: {exc.strerror or exc}", hint=hint) from None
    try:
        return fd, check_open(fd, label, error)
    except BaseException:
        os.close(fd)
        raise


def too_large(label: str, size: int | None, limit: int, error: type[DdtuneError] = ConfigError) -> DdtuneError:
    found = f" ({size_text(size)})" if size else ""
    return error(f"{label}: larger than the {size_text(limit)} ddtune reads from such a file{found}",
                 hint="is it the right file? split it, or give the file ddtune wrote")


def read_bytes(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
               hint: str = _HINT, max_bytes: int = MAX_BYTES) -> bytes:
    """The whole file, refused (before a byte is read, where its size says so) when over ``max_bytes``."""
    label = name or str(path)
    fd, st = open_regular(path, error, label, hint)
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > max_bytes:
            raise too_large(label, st.st_size, max_bytes, error)
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise error(f"{label}: cannot read it: {exc.strerror or exc}", hint=hint) from None
    if len(data) > max_bytes:
        raise too_large(label, None, max_bytes, error)
    return data


def read_text(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
              hint: str = _HINT, max_bytes: int = MAX_BYTES) -> str:
    """The file as text. UTF-8 only (a leading UTF-8 BOM is dropped): any other encoding is refused
    rather than guessed, since a wrong guess would quietly change values."""
    label = name or str(path)
    data = read_bytes(path, error, label, hint, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        what = "UTF-16 text" if data.startswith(_UTF16_BOMS) else "binary or not UTF-8"
        raise error(f"{label}: not a UTF-8 text file ({what}; bad byte at offset {exc.start})",
                    hint="save the file as UTF-8 text") from None


def read_toml(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError,
              name: str | None = None) -> dict[str, Any]:
    """The TOML document in the file, as a dict."""
    label = name or str(path)
    text = read_text(path, error, label, max_bytes=MAX_TOML_BYTES)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{label}: not valid TOML: {exc}", hint="fix the syntax at the line named above") from None
    except RecursionError:
        raise error(f"{label}: not valid TOML: nested too deeply", hint="flatten the nested arrays or tables") from None


def read_json(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
              hint: str = _HINT, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON document in the file (any JSON value: callers check the shape they need)."""
    label = name or str(path)
    text = read_text(path, error, label, hint, max_bytes)
    try:
        return loads(text)
    except TooDeep as exc:
        raise error(f"{label}: JSON {exc}", hint=hint) from None
    except ValueError as exc:
        raise error(f"{label}: not JSON: {exc}", hint=hint) from None


class Lines:
    """The lines of one file, streamed: ``for number, line in Lines(path, ...)`` gives each line's
    number (from 1) and bytes, its ``\\n`` removed. Memory stays within ``max_line`` plus a chunk,
    whatever the file holds.

    - a line longer than ``max_line`` bytes is skipped; its number goes to ``long_lines``;
    - ``unterminated``: the number of a last line with no ``\\n`` (a writer killed mid-line leaves one);
    - a file over ``max_bytes``: ``over="refuse"`` raises before reading (``too_large``);
      ``"head"`` reads its first ``max_bytes``, ``"tail"`` its last ``max_bytes`` from the first line
      that starts in them (line numbers then count from there: ``numbered`` is False); ``cut`` says
      that part of the file was left unread.

    ``fd``: a file the caller opened and proved regular itself (a state file: backends.core.statefs);
    the stream owns it from then on. Iterate once; the file is closed at the end (or by ``close``)."""

    def __init__(self, path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
                 hint: str = _HINT, *, max_bytes: int = MAX_BYTES, max_line: int = MAX_LINE, over: str = "refuse",
                 fd: int | None = None) -> None:
        self._fd: int | None = None
        self.label = name or str(path)
        if fd is None:
            fd, st = open_regular(path, error, self.label, hint)
        else:
            st = os.fstat(fd)
        self._fd = fd
        self.error, self.hint, self.max_line = error, hint, max_line
        self.size = st.st_size
        self.long_lines: list[int] = []
        self.unterminated: int | None = None
        self.offset = 0  # where the line being read (the one just given, while it is used) starts
        self.cut = self.size > max_bytes
        self.numbered = True
        self._start, self._budget = 0, max_bytes
        if self.cut and over == "refuse":
            self.close()
            raise too_large(self.label, self.size, max_bytes, error)
        if self.cut and over == "tail":
            self._start, self.numbered = self.size - max_bytes, False
        try:
            self._partial = self._start > 0 and os.pread(fd, 1, self._start - 1) != b"\n"
        except OSError:
            self._partial = True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def _chunks(self) -> Iterator[bytes]:
        fd, offset, left = self._fd, self._start, self._budget
        if fd is None:
            return
        try:
            while left > 0:
                chunk = os.pread(fd, min(CHUNK, left), offset)
                if not chunk:
                    return
                offset += len(chunk)
                left -= len(chunk)
                yield chunk
            self.cut = self.cut or bool(os.pread(fd, 1, offset))  # it grew past the limit while read
        except OSError as exc:
            raise self.error(f"{self.label}: cannot read it: {exc.strerror or exc}", hint=self.hint) from None
        finally:
            self.close()

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        pending = bytearray()
        number = 0
        skipping = False   # the current line is over max_line: dropped up to its end
        partial = self._partial  # a tail that begins mid-line: up to the first break is no whole line
        at = self.offset = self._start  # the file offset of the chunk's first byte
        for chunk in self._chunks():
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                stop = end if end >= 0 else len(chunk)
                if not (skipping or partial):
                    if len(pending) + stop - start > self.max_line:
                        skipping = True
                        pending.clear()
                    else:
                        pending += chunk[start:stop]
                if end < 0:
                    break
                start = end + 1
                if partial:
                    partial = False
                elif skipping:
                    number += 1
                    self.long_lines.append(number)
                    skipping = False
                else:
                    number += 1
                    yield number, bytes(pending)
                pending.clear()
                self.offset = at + start
            at += len(chunk)
        if partial or (self.cut and self.numbered):
            return  # the last bytes read end mid-line where the limit cut the file: no line
        if skipping or pending:
            number += 1
            self.unterminated = number
            if skipping:
                self.long_lines.append(number)
            else:
                yield number, bytes(pending)

    def note(self) -> str | None:
        """What was left out, for the user: long lines skipped and a part unread; None when nothing was."""
        parts = []
        if self.long_lines:
            which = ", ".join(str(n) for n in self.long_lines[:5]) + (" ..." if len(self.long_lines) > 5 else "")
            where = f"line{'s' if len(self.long_lines) > 1 else ''} {which}" if self.numbered else \
                f"{len(self.long_lines)} line(s)"
            parts.append(f"skipped {where}: longer than the {size_text(self.max_line)} ddtune reads as one line")
        if self.cut:
            part = "first" if self.numbered else "last"
            parts.append(f"read only its {part} {size_text(self._budget)} of {size_text(self.size)}")
        return f"{self.label}: " + "; ".join(parts) if parts else None


@dataclass(frozen=True)
class JsonLines:
    """The JSON values of a JSON-lines file, by line number, and what was left out: lines that are
    not JSON (not UTF-8, torn, nested too deep) and lines over the length limit."""

    records: list[tuple[int, Any]]
    bad: list[tuple[int, str]]
    lines: Lines
    not_utf8: int | None = None  # the file offset of the first byte that is not UTF-8 (a binary file)

    def refuse_binary(self, error: type[DdtuneError] = ConfigError) -> None:
        """Raise ``error`` naming the file when it holds bytes that are not UTF-8: no file ddtune writes
        does, so it is not one of them (a line that is JSON but torn costs only itself)."""
        if self.not_utf8 is not None:
            raise error(f"{self.lines.label}: not a UTF-8 text file (binary or not UTF-8; bad byte at offset "
                        f"{self.not_utf8})", hint="give the file ddtune wrote, saved as UTF-8 text")

    def note(self) -> str | None:
        return self.lines.note()


def read_jsonl(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
               hint: str = _HINT, *, max_bytes: int = MAX_BYTES, max_line: int = MAX_LINE, over: str = "refuse",
               fd: int | None = None) -> JsonLines:
    """Every line of the file that holds JSON, streamed (``Lines``). A line that does not is set
    aside in ``bad``: the stores append one line at a time, so a crash can leave a torn last line.
    Lines end at ``\\n`` only: records are written with ``ensure_ascii=False``, so a string may hold
    U+2028 or other characters ``str.splitlines`` would break on."""
    lines = Lines(path, error, name, hint, max_bytes=max_bytes, max_line=max_line, over=over, fd=fd)
    records: list[tuple[int, Any]] = []
    bad: list[tuple[int, str]] = []
    not_utf8 = None
    for number, line in lines:
        if not line.strip():
            continue
        try:
            records.append((number, loads(line.decode("utf-8"))))
        except UnicodeDecodeError as exc:
            bad.append((number, "not UTF-8 text"))
            not_utf8 = lines.offset + exc.start if not_utf8 is None else not_utf8
        except ValueError as exc:
            bad.append((number, str(exc) if isinstance(exc, TooDeep) else "not JSON"))
    return JsonLines(records, bad, lines, not_utf8)


def warn(text: str) -> None:
    """A note for the user of a headless command, on stderr (stdout may be one JSON document)."""
    sys.stderr.write(f"ddtune: warning: {text}\n")

