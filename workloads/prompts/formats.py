"""The field's prompt formats, detected per record (``read_record``). Pure.

Each record (a JSON object: a line of a JSONL file, an element of a JSON array, a row of a
``datasets`` split) is read by the first format whose key it has, in this order:

=====================  =========================================================  ===========================
format                 fields                                                     sent
=====================  =========================================================  ===========================
``openai``             ``messages: [{role, content}]``, ``max_tokens``?           up to the last user message;
                       (``max_completion_tokens``)                                 a closing assistant turn is
                                                                                  the recorded ``reply``
``sharegpt``           ``conversations: [{from, value}]``                         up to the last human turn
``aiperf-multi-turn``  ``session_id``, ``turns: [{text | texts, output_length?}]`` the first turn; the others
                                                                                  after the live reply
``mt-bench``           ``question_id``, ``category``, ``turns: [q1, q2, ...]``    q1; q2... after the live reply
``humaneval``          ``task_id``, ``prompt``                                    ``prompt``
``gsm8k``              ``question``, ``answer``                                   ``question``
``alpaca``             ``instruction``, ``input``?, ``output``?                   instruction (+ input)
``math``               ``problem``, ``answer`` | ``solution``?                    ``problem``
``aiperf-single-turn`` ``text`` | ``texts``, ``output_length``?                   the text(s)
``prompt``             ``prompt``, ``output_tokens`` | ``max_tokens``?            ``prompt``
=====================  =========================================================  ===========================

A record that no format fits, or whose field has the wrong shape, raises ``RecordError`` naming the
field; the reader (workloads/prompts/files.py) reports it with its file and line and goes on. Text is
kept exactly as written: it is what the server receives.
"""

from __future__ import annotations

from typing import Any

from backends.core import shown
from workloads.prompts.records import ROLES, PromptRecord, Turn
from workloads.runs.checks import PLAUSIBLE

SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "chatgpt": "assistant", "bard": "assistant", "bing": "assistant", "model": "assistant",
                  "system": "system"}
MAX_TOKENS = PLAUSIBLE["max_tokens"]
KEYS = ("messages", "conversations", "turns", "prompt", "text", "texts", "question", "instruction", "problem")


class RecordError(ValueError):
    """A record no format reads: ``field`` names where (``messages[2].content``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"field '{field}': {problem}")
        self.field = field


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise RecordError(field, f"expected a string, got {type(value).__name__}")
    if not value.strip():
        raise RecordError(field, "is empty")
    if "\x00" in value:
        raise RecordError(field, "holds a NUL byte")
    return value


def _count(value: Any, field: str) -> int | None:
    """An output length: a whole number from 1 to what a plan may hold (a record's file is anyone's:
    10**400 overflowed the stream's bounds, 2**63 voided them)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        got = f"an integer of {value.bit_length()} bits" if isinstance(value, int) and value.bit_length() > 64 \
            else shown(value, 40)
        raise RecordError(field, f"expected a whole number from 1 to {MAX_TOKENS:,}, got {got}")
    return value


def _content(value: Any, field: str) -> str:
    """An OpenAI message's content: a string, or a list of ``{"type": "text", "text"}`` parts."""
    if isinstance(value, list):
        parts = []
        for i, part in enumerate(value):
            if not isinstance(part, dict) or part.get("type", "text") != "text":
                raise RecordError(f"{field}[{i}]", "only text parts can be sent (type \"text\")")
            parts.append(_text(part.get("text"), f"{field}[{i}].text"))
        if not parts:
            raise RecordError(field, "is empty")
        return "".join(parts)
    return _text(value, field)


def _cut_at_last_user(turns: list[Turn], field: str) -> tuple[tuple[Turn, ...], str | None]:
    """The turns up to the last user message, and the assistant turn right after it (the recorded reply)."""
    last = max((i for i, t in enumerate(turns) if t.role == "user"), default=None)
    if last is None:
        raise RecordError(field, "has no user message")
    after = turns[last + 1] if last + 1 < len(turns) else None
    reply = after.content if after is not None and after.role == "assistant" else None
    return tuple(turns[:last + 1]), reply


def _conversation(raw: dict, key: str, role_key: str, text_key: str, roles: dict[str, str],
                  expected: str) -> tuple[tuple[Turn, ...], str | None]:
    """A list of turns (``{role_key, text_key}`` objects) cut at its last user message, and the reply after it."""
    items = raw[key]
    if not isinstance(items, list) or not items:
        raise RecordError(key, f"expected a non-empty list of {{{role_key}, {text_key}}}")
    turns = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordError(f"{key}[{i}]", f"expected an object {{{role_key}, {text_key}}}")
        who = item.get(role_key)
        role = roles.get(who.lower()) if isinstance(who, str) else None
        if role is None:
            raise RecordError(f"{key}[{i}].{role_key}", f"expected {expected}, got {who!r}")
        turns.append(Turn(role, _content(item.get(text_key), f"{key}[{i}].{text_key}")))
    return _cut_at_last_user(turns, key)


def _openai(raw: dict) -> dict:
    kept, reply = _conversation(raw, "messages", "role", "content", {r: r for r in ROLES},
                                f"one of {', '.join(ROLES)}")
    given = raw.get("max_tokens", raw.get("max_completion_tokens"))
    return {"messages": kept, "reply": reply,
            "max_tokens": _count(given, "max_tokens" if "max_tokens" in raw else "max_completion_tokens")}


def _sharegpt(raw: dict) -> dict:
    kept, reply = _conversation(raw, "conversations", "from", "value", SHAREGPT_ROLES, "human or gpt")
    return {"messages": kept, "reply": reply}


def _turn_text(turn: Any, field: str) -> str:
    if isinstance(turn, str):
        return _text(turn, field)
    if isinstance(turn, dict):
        if "texts" in turn and "text" not in turn:
            return _texts(turn["texts"], f"{field}.texts")
        return _text(turn.get("text"), f"{field}.text")
    raise RecordError(field, "expected a string or an object with text")


def _texts(value: Any, field: str) -> str:
    if isinstance(value, list) and value:
        return "\n".join(_text(t, f"{field}[{i}]") for i, t in enumerate(value))
    raise RecordError(field, "expected a non-empty list of strings")


def _turns(raw: dict) -> dict:
    turns = raw["turns"]
    if not isinstance(turns, list) or not turns:
        raise RecordError("turns", "expected a non-empty list")
    texts = [_turn_text(t, f"turns[{i}]") for i, t in enumerate(turns)]
    first = turns[0]
    max_tokens = _count(first.get("output_length"), "turns[0].output_length") if isinstance(first, dict) else None
    return {"messages": (Turn("user", texts[0]),), "followups": tuple(texts[1:]), "max_tokens": max_tokens}


def _single(text: str, max_tokens: int | None = None, reply: str | None = None) -> dict:
    return {"messages": (Turn("user", text),), "max_tokens": max_tokens, "reply": reply}


def _optional_text(raw: dict, key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) and value.strip() else None


def detect(raw: Any) -> tuple[str, dict]:
    """(format, fields) of one record; RecordError when no format reads it."""
    if not isinstance(raw, dict):
        raise RecordError("record", f"expected a JSON object, got {type(raw).__name__}")
    if "messages" in raw:
        return "openai", _openai(raw)
    if "conversations" in raw:
        return "sharegpt", _sharegpt(raw)
    if "turns" in raw:
        fields = _turns(raw)
        return ("aiperf-multi-turn" if "session_id" in raw or isinstance(raw["turns"][0], dict)
                else "mt-bench"), fields
    if "task_id" in raw and "prompt" in raw:
        return "humaneval", _single(_text(raw["prompt"], "prompt"))
    if "question" in raw:
        return "gsm8k", _single(_text(raw["question"], "question"), reply=_optional_text(raw, "answer"))
    if "instruction" in raw:
        text = _text(raw["instruction"], "instruction")
        extra = _optional_text(raw, "input")
        return "alpaca", _single(f"{text}\n\n{extra}" if extra else text, reply=_optional_text(raw, "output"))
    if "problem" in raw:
        return "math", _single(_text(raw["problem"], "problem"),
                               reply=_optional_text(raw, "solution") or _optional_text(raw, "answer"))
    if "text" in raw or "texts" in raw:
        text = _text(raw["text"], "text") if "text" in raw else _texts(raw["texts"], "texts")
        return "aiperf-single-turn", _single(text, _count(raw.get("output_length"), "output_length"))
    if "prompt" in raw:
        key = "output_tokens" if "output_tokens" in raw else "max_tokens"
        return "prompt", _single(_text(raw["prompt"], "prompt"), _count(raw.get(key), key))
    raise RecordError("record", f"no prompt field: expected one of {', '.join(KEYS)}")


def _id(raw: dict, fallback: str) -> str:
    for key in ("id", "task_id", "question_id", "session_id"):
        value = raw.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value)
    return fallback


def read_record(raw: Any, fallback_id: str) -> PromptRecord:
    """One record as a PromptRecord (RecordError naming the field when it cannot be read)."""
    fmt, fields = detect(raw)
    category = raw.get("category") if isinstance(raw.get("category"), str) else None
    if fmt == "humaneval":
        category = category or "coding"
    return PromptRecord(_id(raw, fallback_id), fields["messages"], fields.get("followups", ()),
                        fields.get("max_tokens"), category, fields.get("reply"), fmt)
