"""Read a prompt file: JSON Lines (one record a line) or a JSON array of records, plain or gzipped.

Every record goes through ``formats.read_record``, which detects its format on its own, so a file
may mix formats. A record that cannot be read is one line naming the file, its line and the field
(``prompts.jsonl line 7: field 'messages[1].content': expected a string, got int; record skipped``)
and the rest goes on; a file none of whose records can be read is an error (UsageError, exit 2).
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
import json
from pathlib import Path
from typing import Any

from backends.core import MAX_BYTES, TooDeep, loads, read_bytes
from backends.core import UsageError
from workloads.prompts.formats import RecordError, read_record
from workloads.prompts.records import PromptRecord

HINT = ("one JSON object per line (JSONL) or a JSON array of them, in a format docs/workloads.md lists "
        "(messages, conversations, turns, prompt, text, question, ...)")


def _raw(path: Path) -> bytes:
    """The file's bytes through the one door for what ddtune reads (backends.core.datafile: a regular
    file, never a FIFO, a device or /proc, within the size limit), inflated when it is gzip, the
    inflated size bounded as well."""
    if not os.path.lexists(path):
        raise UsageError(f"--prompts {path}: no such file",
                         hint="give a built-in name (coding, story, humaneval), a JSON/JSONL file or hf:NAME")
    data = read_bytes(path, UsageError, f"--prompts {path}", "check the path and its permissions")
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as zh:
                data = zh.read(MAX_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise UsageError(f"--prompts {path}: not a readable gzip file ({exc})", hint=HINT) from None
        if len(data) > MAX_BYTES:
            raise UsageError(f"--prompts {path}: inflates to more than the {MAX_BYTES // 1024**2} MB ddtune reads",
                             hint="split it, or keep the prompts you want to measure")
    return data


def _text(path: Path) -> str:
    data = _raw(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"--prompts {path}: not UTF-8 text (bad byte at offset {exc.start})",
                         hint="save the file as UTF-8") from None


def _array(text: str, path: Path) -> list[tuple[int, Any]]:
    """(line, element) of a JSON array, each element decoded on its own so its line is known."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    out: list[tuple[int, Any]] = []
    line, counted = 1, 0  # the line ``counted`` is on: each stretch counted once (from 0 each time was quadratic)
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            raise UsageError(f"--prompts {path}: the JSON array is not closed", hint=HINT)
        if text[pos] == "]":
            return out
        line, counted = line + text.count("\n", counted, pos), pos
        try:
            value, end = decoder.raw_decode(text, pos)
        except RecursionError:
            raise UsageError(f"--prompts {path} line {line}: JSON nested too deeply", hint=HINT) from None
        except ValueError as exc:
            raise UsageError(f"--prompts {path} line {line}: not JSON: {exc}", hint=HINT) from None
        out.append((line, value))
        pos = end


class _Unreadable(str):
    """A line that is not JSON, in its place among the records: its problem, reported in line order."""


def _why(line: str) -> str:
    try:
        loads(line)
    except TooDeep as exc:
        return f"JSON {exc}"
    except ValueError as exc:
        return f"not JSON ({exc})"
    return "not JSON"


def _lines(text: str) -> list[tuple[int, Any]]:
    """(line, record) of each JSON line, and (line, _Unreadable) in the place of each line that is not."""
    out: list[tuple[int, Any]] = []
    for n, line in enumerate(text.split("\n"), 1):  # \n only: a string may hold U+2028
        if not line.strip():
            continue
        try:
            out.append((n, loads(line)))
        except ValueError:
            out.append((n, _Unreadable(_why(line))))
    return out


def _one_object(text: str) -> dict | None:
    """A file that is one JSON object written over several lines (not JSONL): that object."""
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def read_records(entries: list[tuple[int, Any]], where: str, problems: list[str]) -> list[PromptRecord]:
    """Each (line, raw record) read; an unreadable one is a line in ``problems``, naming ``where`` and the line."""
    out: list[PromptRecord] = []
    for line, raw in entries:
        if isinstance(raw, _Unreadable):
            problems.append(f"{where} line {line}: {raw}; record skipped")
            continue
        try:
            out.append(read_record(raw, f"{Path(where).name}:{line}"))
        except RecordError as exc:
            problems.append(f"{where} line {line}: {exc}; record skipped")
    return out


def read_prompt_file(path: str | Path) -> tuple[list[PromptRecord], list[str]]:
    """The file's records and one line per record skipped. UsageError when nothing can be read."""
    path = Path(path).expanduser()
    text = _text(path)
    problems: list[str] = []
    stripped = text.lstrip()
    whole = _one_object(text) if stripped.startswith("{") and "\n" in stripped.rstrip() else None
    if stripped.startswith("["):
        entries = _array(text, path)
    elif whole is not None:
        entries = [(text.count("\n", 0, len(text) - len(stripped)) + 1, whole)]
    else:
        entries = _lines(text)
    records = read_records(entries, str(path), problems)
    if not records:
        first = f": {problems[0]}" if problems else ""
        raise UsageError(f"--prompts {path}: no prompt could be read{first}", hint=HINT)
    return records, problems
