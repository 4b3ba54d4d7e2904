"""The lossless check: speculative decoding must not change greedy output.

Fixed prompts (the first N shipped coding problems, in file order) go to SGLang's native
``/generate`` at temperature 0 with a fixed ``max_new_tokens``, one at a time (a greedy output can
depend on the batch it ran in, so baseline and check both run alone). Outputs are compared token by
token with a baseline recorded with speculation off: by ``output_ids`` when the server returns
them (SGLang and the simulator do), else by the text split on whitespace (``unit`` says which).

A baseline file is one JSON document (:func:`baseline_doc`); :func:`read_baseline` checks it and
names the fix for every way it can be wrong.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from backends.core import auth_headers
from backends.core import loads, read_text
from backends.core import ConfigError, ServerError, UsageError
from backends.core import BadAnswer, fetch
from backends.core import plain
from backends.core import write_atomic
from workloads.grading.problems import Problem

GENERATE_IDLE_S = 600.0  # a greedy /generate answers once it has generated: that long without a byte at most
KIND = "ddtune-lossless-baseline"
FORMAT = 1
RECORD_HINT = ("record one against the server with speculation off: "
               "'ddtune check-lossless --save-baseline FILE' (see docs/lossless.md)")


@dataclass(frozen=True)
class Output:
    """One prompt's greedy output: its tokens (ids, or whitespace-split words) and text."""

    id: str
    prompt: str
    tokens: tuple
    text: str


@dataclass(frozen=True)
class Baseline:
    model: str
    max_tokens: int
    unit: str                     # "token_ids" or "words"
    outputs: tuple[Output, ...]
    path: str


def baseline_prompts(problems: tuple[Problem, ...], n: int) -> list[tuple[str, str]]:
    """(id, text) of the first ``n`` problems: the fixed prompts of the check."""
    if n > len(problems):
        raise UsageError(f"--prompts {n}: there are only {len(problems)} coding problems to send",
                         hint=f"use --prompts {len(problems)} or fewer")
    return [(p.id, p.chat_prompt()) for p in problems[:n]]


def first_difference(a: tuple | list, b: tuple | list) -> int | None:
    """The first position where two token sequences differ (a shorter one differs where it ends);
    None when they are equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


async def server_identity(http: httpx.AsyncClient) -> dict:
    """model (the target model's path, else the served name) and speculative (True, False, or None
    when /server_info cannot be read) of the server."""
    info = await _get(http, "/server_info", required=False)
    model = info.get("model_path") if isinstance(info, dict) else None
    if not model:
        data = (await _get(http, "/v1/models", required=True) or {}).get("data") or []
        model = data[0].get("id") if data and isinstance(data[0], dict) else None
    spec = bool(info.get("speculative_algorithm")) if isinstance(info, dict) else None
    algorithm = info.get("speculative_algorithm") if isinstance(info, dict) else None
    return {"model": model or "unknown", "speculative": spec, "algorithm": algorithm,
            "version": info.get("version") if isinstance(info, dict) else None}


async def _get(http: httpx.AsyncClient, path: str, required: bool) -> dict | None:
    try:
        answer = await fetch(http, "GET", path, idle=30.0)
    except httpx.HTTPError as exc:
        raise ServerError(f"cannot reach {http.base_url}{path}: {exc.__class__.__name__}: {exc}",
                          hint="is the server up? check --url or 'ddtune status'") from exc
    if answer.status != 200:
        if not required:
            return None
        raise ServerError(f"{http.base_url}{path} answered HTTP {answer.status}",
                          hint="check --api-key" if answer.status in (401, 403) else None)
    try:
        doc = answer.json(one_line=True)  # the server's text, untrusted: bounded and made plain where it enters
    except BadAnswer:
        return None
    return doc if isinstance(doc, dict) else None


async def generate(http: httpx.AsyncClient, pid: str, text: str, max_tokens: int) -> tuple[Output, str]:
    """One greedy generation, not streamed; the output and its unit."""
    body = {"text": text, "sampling_params": {"temperature": 0, "max_new_tokens": max_tokens}}
    try:
        answer = await fetch(http, "POST", "/generate", json=body, idle=GENERATE_IDLE_S)
    except BadAnswer as exc:
        raise ServerError(f"prompt {pid}: /generate: {exc}") from None
    except httpx.HTTPError as exc:
        raise ServerError(f"prompt {pid}: cannot reach {http.base_url}/generate: {exc.__class__.__name__}",
                          hint="is the server up? 'ddtune status'") from exc
    if answer.status != 200:
        raise ServerError(f"prompt {pid}: /generate answered HTTP {answer.status}: "
                          f"{plain(answer.text[:200], one_line=True)}",
                          hint="check --api-key" if answer.status in (401, 403) else None)
    try:
        doc = answer.json()
    except BadAnswer:
        raise ServerError(f"prompt {pid}: /generate did not answer JSON") from None
    if isinstance(doc, list):  # a server that answers a single prompt as a batch of one
        doc = doc[0] if doc else {}
    out_text = doc.get("text") if isinstance(doc, dict) else None
    if not isinstance(out_text, str):
        raise ServerError(f"prompt {pid}: /generate answered without a text")
    ids = doc.get("output_ids")
    if isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids):
        return Output(pid, text, tuple(ids), out_text), "token_ids"
    return Output(pid, text, tuple(out_text.split()), out_text), "words"


async def record_outputs(url: str, api_key: str | None, items: list[tuple[str, str]], max_tokens: int,
                 admit: Callable[[dict], None] | None = None,
                 progress: Callable[[int, int], None] | None = None) -> tuple[dict, list[Output], str]:
    """The server's identity, every prompt's output (one at a time) and the unit they were compared
    in ("words" as soon as one output came without ids). ``admit(identity)`` runs before the first
    prompt is sent and may raise to stop there."""
    async with httpx.AsyncClient(base_url=url, headers=auth_headers(api_key),
                                 timeout=httpx.Timeout(GENERATE_IDLE_S, connect=10.0)) as http:
        ident = await server_identity(http)
        if admit is not None:
            admit(ident)
        outputs, units = [], set()
        for pid, text in items:
            out, unit = await generate(http, pid, text, max_tokens)
            outputs.append(out)
            units.add(unit)
            if progress is not None:
                progress(len(outputs), len(items))
    if "words" in units:
        outputs = [Output(o.id, o.prompt, tuple(o.text.split()), o.text) for o in outputs]
        return ident, outputs, "words"
    return ident, outputs, "token_ids"


def baseline_doc(ident: dict, outputs: list[Output], unit: str, max_tokens: int, url: str) -> dict:
    return {"kind": KIND, "format": FORMAT, "model": ident["model"], "server_version": ident.get("version"),
            "speculative": ident.get("speculative"), "url": url, "recorded_at": time.time(),
            "max_tokens": max_tokens, "unit": unit,
            "prompts": [{"id": o.id, "prompt": o.prompt, "tokens": list(o.tokens), "text": o.text} for o in outputs]}


def write_baseline(path: str, doc: dict) -> None:
    write_atomic(path, json.dumps(doc) + "\n")  # never through a link (backends.core.writes)


def read_baseline(path: str) -> Baseline:
    """The baseline file, checked: a missing, unreadable or malformed one is a ConfigError (exit 2)
    that names the fix."""
    raw = read_text(path, ConfigError, f"baseline file {path}", RECORD_HINT)  # a regular file, bounded, UTF-8
    try:
        doc = loads(raw)
    except ValueError as exc:
        raise ConfigError(f"baseline file {path}: not JSON ({exc}); the file is corrupt or not a baseline",
                          hint=RECORD_HINT) from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise ConfigError(f"baseline file {path}: not a ddtune lossless baseline (no \"kind\": \"{KIND}\")",
                          hint=RECORD_HINT)
    if doc.get("format") != FORMAT:
        raise ConfigError(f"baseline file {path}: format {doc.get('format')!r}, this ddtune reads format {FORMAT}",
                          hint=RECORD_HINT)
    try:
        outputs = tuple(Output(str(p["id"]), _str(p["prompt"]), _tokens(p["tokens"]), _str(p["text"]))
                        for p in doc["prompts"])
        max_tokens, unit, model = doc["max_tokens"], doc["unit"], doc["model"]
        if not (isinstance(max_tokens, int) and max_tokens > 0 and unit in ("token_ids", "words")
                and isinstance(model, str) and outputs):
            raise ValueError("bad max_tokens, unit, model or no prompts")
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"baseline file {path}: malformed ({exc.__class__.__name__}: {exc}); the file is corrupt",
                          hint=RECORD_HINT) from None
    return Baseline(model, max_tokens, unit, outputs, path)


def _str(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _tokens(value) -> tuple:
    if not isinstance(value, list):
        raise TypeError(f"tokens: expected a list, got {type(value).__name__}")
    return tuple(value)


def check_matches(baseline: Baseline, model: str, items: list[tuple[str, str]]) -> None:
    """The baseline belongs to this model and these prompts, else a UsageError naming the fix."""
    if baseline.model != model:
        raise UsageError(f"baseline file {baseline.path} was recorded from model {baseline.model!r}, "
                         f"the server runs {model!r}",
                         hint="record a baseline for this model with speculation off: 'ddtune check-lossless "
                              "--save-baseline FILE' (see docs/lossless.md)")
    mine = [(o.id, o.prompt) for o in baseline.outputs]
    if mine != items:
        bad = next((i for i, (a, b) in enumerate(zip(mine, items, strict=False)) if a != b), min(len(mine), len(items)))
        raise UsageError(f"baseline file {baseline.path}: its prompts do not match the ones ddtune sends now "
                         f"(prompt #{bad + 1} differs; the baseline has {len(mine)}, this check {len(items)})",
                         hint="leave --prompts out to use the baseline's count; if the coding problems changed, "
                              "record the baseline again")


def compare_outputs(baseline: Baseline, outputs: list[Output], unit: str) -> dict:
    """The report: per prompt whether it diverged and where, the divergence rate."""
    same = unit == baseline.unit   # else both sides are compared as words
    results = []
    for base, out in zip(baseline.outputs, outputs, strict=True):
        a = base.tokens if same else tuple(base.text.split())
        b = out.tokens if same else tuple(out.text.split())
        at = first_difference(a, b)
        results.append({"id": base.id, "diverged": at is not None, "first_difference": at,
                        "baseline_tokens": len(a), "tokens": len(b),
                        # what each side has from the first difference on (a few tokens)
                        "baseline_from": list(a[at:at + 5]) if at is not None else [],
                        "from": list(b[at:at + 5]) if at is not None else []})
    diverged = sum(1 for r in results if r["diverged"])
    return {"unit": unit if same else "words", "prompts": len(results), "diverged": diverged,
            "divergence_rate": diverged / len(results) if results else 0.0, "max_tokens": baseline.max_tokens,
            "baseline": baseline.path, "model": baseline.model, "results": results}
