"""How a server of each engine is asked for one generation and for an account of itself.

SGLang: ``POST /generate`` (``meta_info.completion_tokens``, ``spec_verify_ct``) and ``/server_info``.
llama.cpp's ``llama-server``: ``POST /completion`` (``tokens_predicted``; ``timings.draft_n`` and
``draft_n_accepted`` under speculation) and ``/props`` with ``/slots``, which ``llamacpp_info`` turns
into the keys ddtune reads of a ``/server_info`` (``version``, ``model_path``, ``speculative_algorithm``),
so every reader of "what the server says about itself" reads one shape. A driver names its dialect
(``Driver.DIALECT``); nobody checks an engine's name for it. Pure, apart from ``fetch_info``, which
reads through the one door for a server's answers (``backends.core.answers``: bounded, strings plain
and on one line, numbers out of range dropped); every count is checked there too (``count``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from backends.core.answers import count, fetch

Note = Callable[[str], object]


def steps_of(tokens: Any, accepted: Any) -> int | None:
    """A llama.cpp response's target steps: each step yields its accepted draft tokens plus one, so
    steps = tokens - accepted (the prompt's first token is a step too). None without both numbers."""
    if not isinstance(tokens, int) or not isinstance(accepted, int) or isinstance(accepted, bool):
        return None
    steps = tokens - accepted
    return steps if steps > 0 else None


class Dialect:
    """SGLang's: the base the other engines differ from."""

    engine = "SGLang"
    generate_path = "/generate"
    info_path = "/server_info"

    def generate_body(self, prompt: str, max_tokens: int, ignore_eos: bool = False) -> dict:
        params: dict[str, Any] = {"max_new_tokens": max_tokens, "temperature": 0}
        if ignore_eos:
            params["ignore_eos"] = True
        return {"text": prompt, "sampling_params": params}

    def tokens(self, body: Any) -> int:
        """Tokens a ``generate_body`` answer generated (0 if it says none)."""
        if isinstance(body, list):
            body = body[0] if body else {}
        if not isinstance(body, dict):
            return 0
        meta = body.get("meta_info")
        tokens = count(meta.get("completion_tokens")) if isinstance(meta, dict) else None
        if tokens is not None:
            return tokens
        return 1 if body.get("text") else 0

    def acceptance(self, body: Any) -> float | None:
        """Tokens per verify step of one answer (bonus included); None when it does not say."""
        meta = body.get("meta_info") if isinstance(body, dict) else None
        if not isinstance(meta, dict):
            return None
        steps, tokens = count(meta.get("spec_verify_ct")), count(meta.get("completion_tokens"))
        if steps and tokens is not None:
            return tokens / steps
        return None

    async def fetch_info(self, client: httpx.AsyncClient, url: str, note: Note | None = None) -> dict | None:
        """The account of itself, or None when the server has none to give (an error status)."""
        info = await _info_json(client, f"{url}{self.info_path}", note)
        return info if isinstance(info, dict) else None


class LlamaCppDialect(Dialect):
    engine = "llama.cpp"
    generate_path = "/completion"
    info_path = "/props"

    def generate_body(self, prompt: str, max_tokens: int, ignore_eos: bool = False) -> dict:
        return {"prompt": prompt, "n_predict": max_tokens, "temperature": 0, "ignore_eos": ignore_eos,
                "cache_prompt": False}

    def tokens(self, body: Any) -> int:
        if not isinstance(body, dict):
            return 0
        tokens = count(body.get("tokens_predicted"))
        if tokens is not None:
            return tokens
        return 1 if body.get("content") else 0

    def acceptance(self, body: Any) -> float | None:
        timings = body.get("timings") if isinstance(body, dict) else None
        if not isinstance(timings, dict):
            return None
        tokens = count(timings.get("predicted_n"))
        steps = steps_of(tokens, count(timings.get("draft_n_accepted")))
        return tokens / steps if steps and tokens is not None else None

    async def fetch_info(self, client: httpx.AsyncClient, url: str, note: Note | None = None) -> dict | None:
        props = await _info_json(client, f"{url}/props", note)
        if props is None:
            return None
        try:
            slots = await _info_json(client, f"{url}/slots", note)
        except httpx.HTTPError:
            slots = None  # /slots is off (--no-slots) or unusable: the draft is then unknown
        return llamacpp_info(props, slots)


async def _info_json(client: httpx.AsyncClient, url: str, note: Note | None) -> Any:
    """One account read through the door: None on an error status; the numbers it dropped told to ``note``."""
    answer = await fetch(client, "GET", url, idle=5.0)
    if answer.status != 200:
        return None
    info = answer.json(one_line=True)  # each string is shown after a label: never a second line
    if answer.dropped and note is not None:
        note(f"{answer.where}: dropped values that are not numbers ddtune uses: {', '.join(answer.dropped)}")
    return info


SGLANG = Dialect()
LLAMACPP = LlamaCppDialect()


def llamacpp_info(props: Any, slots: Any, build: str | None = None) -> dict | None:
    """``/props`` (and ``/slots``) of a llama-server in the keys ddtune reads of ``/server_info``.
    ``speculative_algorithm``: "speculative" when a slot says it drafts (llama.cpp names no type
    there), None when the slots say none does, absent when /slots is off (unknown). ``build``: the
    build when /props does not know it (the xllamacpp wheel says ``b0-unknown``)."""
    if not isinstance(props, dict):
        return None
    said = props.get("build_info")
    version = said if isinstance(said, str) and said and not said.startswith("b0-") else build
    info: dict[str, Any] = {"engine": "llama.cpp", "version": version, "model_path": props.get("model_path"),
                            "total_slots": props.get("total_slots"), "build_info": said}
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
        info["n_ctx_slot"] = settings["n_ctx"]
    if isinstance(slots, list) and slots and all(isinstance(s, dict) for s in slots):
        info["speculative_algorithm"] = "speculative" if any(s.get("speculative") for s in slots) else None
    return info
