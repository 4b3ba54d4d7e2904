"""Untrusted text is text: what a server or a model sends is made plain where it enters ddtune.

The rule: every string that comes from a server or a model (``/server_info`` and ``/v1/models``
values, error bodies, streamed answers and reasoning, log lines, the output of model code run in the
sandbox) passes through :func:`plain` (or :func:`plain_data` for decoded JSON) at the one place
ddtune reads it, before anything stores, prints or shows it:

- HTTP: ``workloads.client.stream`` (JSON answers, error bodies, the streamed text of each request),
  ``backends.server.lifecycle.fetch_server_info``, the readiness probe, and ``workloads.grading.lossless`` (its
  own greedy ``/generate`` client);
- logs: ``backends.logs.splitter.LineSplitter``, the one splitter every log reader uses (the
  managed server's log, journald, ``ddtune inspect``);
- the sandbox: ``workloads.grading.sandbox`` for what model code printed.

So every string downstream (the headless commands, the console, run records) holds no control
character but newline and tab. What :func:`plain` removes: the ESC-introduced sequences as a
whole (CSI such as colours and cursor moves, OSC such as a window title or a clipboard write,
DCS/SOS/PM/APC strings, and the short ESC forms), their 8-bit C1 spellings, every other C0
control but ``\\n`` and ``\\t``, DEL and C1 (0x80-0x9f), and the Unicode bidi embeddings,
overrides and isolates (U+202A-U+202E, U+2066-U+2069) that make shown text read other than it is.
Printable text, markup-looking brackets included, is kept as it is: the console must still show
server text as text, never as markup (it hands widgets ``rich.text.Text``, not markup strings).

Pure: no textual, rich or plotext here (``backends`` never imports them).
"""

from __future__ import annotations

import re
from typing import Any

# A string terminator: ESC \ (7-bit) or ST (0x9c); BEL also ends an OSC, as xterm accepts.
_ST = r"(?:\x1b\\|\x9c)"
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"                   # CSI: colours, cursor, erase, modes
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|" + _ST + r")"   # OSC (title, clipboard, hyperlink), terminated
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*" + _ST +  # DCS, SOS, PM, APC strings, terminated
    r"|\x1b[ -/]+[0-~]"                                    # nF: charset designations such as ESC ( B
    r"|\x1b[0-~]"                                          # the two-byte forms (and an unterminated string's start)
)
# What is left after the sequences: lone controls (all but \t and \n), DEL, C1, bidi controls.
_CONTROL_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"[\t\n]")


def plain(text: str, *, one_line: bool = False) -> str:
    """``text`` with no terminal controls (see the module docstring). ``one_line``: tabs and line
    breaks become spaces too, for a value shown on one line (a model name, a version)."""
    if _CONTROL_TEXT.search(text) is not None:  # the common case is one C-speed scan and no copy
        text = _CONTROL_TEXT.sub("", _SEQUENCE.sub("", text))
    if one_line and ("\t" in text or "\n" in text):
        text = _LINE_BREAKS.sub(" ", text)
    return text


def plain_data(value: Any) -> Any:
    """Decoded JSON with :func:`plain` applied to every string in it, keys included."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, dict):
        return {plain(k) if isinstance(k, str) else k: plain_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_data(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain_data(v) for v in value)
    return value


_ESCAPED = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escaped(text: str) -> str:
    """``text`` on one line, its line breaks and every other control shown as an escape (``\\n``,
    ``\\r``, ``\\t``, ``\\x1b``, ``\\u202e``): for a value printed after a label, so that
    no value can start a line of its own (a forged ``verified: ...`` or ``[ok  ]``)."""
    if _ESCAPED.search(text) is None:
        return text
    return _ESCAPED.sub(lambda m: _NAMED.get(m[0]) or (f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100
                                                         else f"\\u{ord(m[0]):04x}"), text)


def is_plain(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`plain` would remove (newline and tab allowed)."""
    return _CONTROL_TEXT.search(text) is None
