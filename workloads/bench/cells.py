"""One bench cell's record (cells.jsonl, docs/results-schema.md): latencies, throughput, acceptance
and where it came from, the alarms it tripped, and what its traffic was (``traffic_stats``). Pure.
"""

from __future__ import annotations

from backends.logs import SpecCounters, counter_acceptance
from backends.logs import DecodeBatch
from backends.logs import weighted_accept
from workloads.client.result import RequestResult
from workloads.grading.evaluate import Grade, summarize
from workloads.stats.metrics import distribution, percentile


def _ms(d) -> dict:
    return {k: (v * 1000 if isinstance(v, float) and k != "count" else v) for k, v in d.to_json().items()}


def cell_stats(context: int, concurrency: int, results: list[RequestResult], duration_s: float,
               grades: list[Grade] | None, started_at: float,
               counters: tuple[SpecCounters | None, SpecCounters | None] = (None, None),
               decode: list[DecodeBatch] | None = None, left_out: frozenset[int] = frozenset()) -> dict:
    """One cell's JSON record (docs/results-schema.md); ``decode``: the server log's decode lines
    the cell covers (``backends.logs.span``), for acceptance where neither requests nor counters have it;
    ``left_out``: indexes of ``results`` whose own acceptance does not count (degenerate answers)."""
    ok = [r for r in results if r.ok]
    counted = [r for i, r in enumerate(results) if r.ok and i not in left_out]
    tokens = sum(r.output_tokens for r in ok)
    itl = [x for r in ok for x in r.itl_s]
    itl_token = [x for r in ok for x in r.itl_token_s]
    prompt = [r.prompt_tokens for r in results if r.prompt_tokens is not None]
    errors = [r.error for r in results if not r.ok]
    acceptance = acceptance_stats(counted, counters, decode)
    return {
        "context": context,
        "concurrency": concurrency,
        "started_at": started_at,
        "duration_s": duration_s,
        "requests": len(results),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "prompt_tokens": {"target": context, "min": min(prompt) if prompt else None,
                          "mean": sum(prompt) / len(prompt) if prompt else None,
                          "max": max(prompt) if prompt else None},
        "output_tokens": tokens,
        "output_tok_s": tokens / duration_s if duration_s > 0 else None,
        "per_stream_tok_s": distribution([r.decode_tok_s for r in ok if r.decode_tok_s is not None]).to_json(),
        "ttft_ms": _ms(distribution([r.ttft_s for r in ok if r.ttft_s is not None])),
        "itl_ms": _ms(distribution(itl)),
        "itl_token_ms": _ms(distribution(itl_token)),
        "e2e_ms": _ms(distribution([r.e2e_s for r in ok])),
        "acceptance": acceptance,
        "alarms": cell_alarms(acceptance),
        "finish_reasons": _count(r.finish_reason or "none" for r in ok),
        "verdicts": summarize(grades) if grades is not None else None,
        # numbers the server sent that are not counts, left out (workloads/client/stream.py)
        "dropped": list(dict.fromkeys(note for r in results for note in r.dropped))[:8],
    }


def acceptance_stats(ok: list[RequestResult],
                     counters: tuple[SpecCounters | None, SpecCounters | None] = (None, None),
                     decode: list[DecodeBatch] | None = None) -> dict | None:
    """``total`` (the server's definition: all completion tokens / all verify steps of the cell),
    beside the per-request ``mean`` and ``p50``, and ``source``:

    - ``request``: the requests' own spec fields;
    - ``counters``: where they carry none (chat before sglang 0.5.19) and the server's /metrics
      counters read at the cell's edges moved (``total`` = Δtokens / Δverify calls);
    - ``log``: without counters either (a server started without ``--enable-metrics``), the
      ``Decode batch`` lines the cell's stretch of the server log holds: their ``accept len``
      weighted by ``#running-req``, the verify calls each line stands for (``lines``, ``weight``).

    Only ``request`` has per-request figures (``mean``, ``p50``, ``count``); the others are the
    server's, over every request it ran in the cell. None on a server known not to speculate, or
    with none of them."""
    if any(r.speculative is False for r in ok):
        return None
    values = [r.acceptance for r in ok if r.acceptance is not None]
    if not values:
        before, after = counters
        total = counter_acceptance(before, after)
        if total is not None and before is not None and after is not None:
            return {"total": total, "mean": None, "p50": None, "count": 0, "source": "counters",
                    "tokens": after.tokens - before.tokens, "verify_calls": after.verify_calls - before.verify_calls}
        total, lines, weight = weighted_accept(decode or ())
        if total is None:
            return None
        return {"total": total, "mean": None, "p50": None, "count": 0, "source": "log", "lines": lines,
                "weight": weight}
    steps = [(r.output_tokens, r.verify_steps) for r in ok if r.verify_steps]
    total = sum(t for t, _ in steps) / sum(v for _, v in steps) if steps else None
    return {"total": total, "mean": sum(values) / len(values), "p50": percentile(values, 50), "count": len(values),
            "source": "request"}


def cell_alarms(acceptance: dict | None) -> list[str]:
    """``acceptance_collapse`` when a speculative server's cell averaged <= 1.10 tokens per verify
    step (its drafter is not helping); acceptance is None on a plain server, which never raises it."""
    from backends.logs import THRESHOLD

    value = None if acceptance is None else acceptance.get("total") or acceptance.get("mean")
    return ["acceptance_collapse"] if value is not None and value <= THRESHOLD else []


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def tpot_s(r: RequestResult) -> float | None:
    """Time per output token after the first (sglang.bench_serving's TPOT)."""
    if r.ttft_s is None or r.output_tokens < 2:
        return None
    return (r.e2e_s - r.ttft_s) / (r.output_tokens - 1)


def traffic_stats(results: list[RequestResult], duration_s: float, max_tokens: list[int],
                  degenerate: dict[int, str], slo: dict[str, float]) -> dict:
    """The cell's traffic: request and token rates, TPOT, goodput within ``slo`` (``ttft_ms``,
    ``tpot_ms``), the requests that ran into their ``max_tokens``, and the degenerate answers
    (index -> why, workloads/bench/quality.py)."""
    ok = [r for r in results if r.ok]
    rate = lambda n: n / duration_s if duration_s > 0 else None  # noqa: E731
    prompt = sum(r.prompt_tokens or 0 for r in ok)
    output = sum(r.output_tokens for r in ok)
    hit = sum(1 for r, cap in zip(results, max_tokens, strict=True)
              if r.ok and (r.finish_reason == "length" or r.output_tokens >= cap))
    out = {"req_s": rate(len(ok)), "input_tok_s": rate(prompt), "total_tok_s": rate(prompt + output),
           "tpot_ms": _ms(distribution([t for r in ok if (t := tpot_s(r)) is not None])),
           "hit_max_tokens": {"count": hit, "share": hit / len(ok) if ok else None},
           "degenerate": {"count": len(degenerate), "why": sorted(set(degenerate.values()))[:5]}}
    if slo:
        good = [r for r in ok if _within(r, slo)]
        out["goodput"] = {"req_s": rate(len(good)), "share": len(good) / len(ok) if ok else None, "slo": dict(slo)}
    return out


def _within(r: RequestResult, slo: dict[str, float]) -> bool:
    ttft, tpot = r.ttft_s, tpot_s(r)
    if "ttft_ms" in slo and (ttft is None or ttft * 1000 > slo["ttft_ms"]):
        return False
    return not ("tpot_ms" in slo and tpot is not None and tpot * 1000 > slo["tpot_ms"])
