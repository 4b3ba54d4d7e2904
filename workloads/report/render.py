"""Render a Report as Markdown, CSV or a JSON document. Pure: strings and dicts out."""

from __future__ import annotations

import csv
import io

from backends.core import plain
from workloads.stats.estimate import Estimate, Ratio
from workloads.report.compare import METRICS, Report
from workloads.report.render_datasets import band_text, bands_markdown, datasets_json, datasets_markdown


def _est(e: Estimate | None, fmt: str = ".1f") -> str:
    if e is None:
        return "-"
    if e.lo is None:
        return format(e.mean, fmt)
    return f"{format(e.mean, fmt)} ±{format(e.half_width, fmt)}"


def cell_title(cell) -> str:
    """``coding, context 4096, concurrency 8`` (an older cell without prompts: as before, without them)."""
    what = f"{cell.prompts}, " if getattr(cell, "prompts", "") else ""
    ctx = "each prompt as it is" if cell[0] == 0 else f"context {cell[0]}"
    rate = getattr(cell, "rate", None)
    return f"{what}{ctx}, concurrency {cell[1]}" + (f", {rate:g} requests/s" if rate is not None else "")


def accept_text(r) -> str:
    """A row's acceptance and, unless it is the requests' own, where it came from: ``5.60 (counters)``."""
    text = _est(r.acceptance, ".2f")
    return f"{text} ({r.acceptance_source})" if r.acceptance is not None and r.acceptance_source not in (
        None, "request") else text


def _ratio(r: Ratio | None) -> str:
    if r is None:
        return "-"
    if r.lo is None:
        return f"x{r.value:.2f}"
    return f"x{r.value:.2f} [{r.lo:.2f}, {r.hi:.2f}]"


def margin_text(r: Ratio | None) -> str:
    """The winner's lead: ``+9.8% (95% CI +3.4% to +16.6%, clear)``."""
    if r is None:
        return "no runner-up"
    text = f"+{(r.value - 1) * 100:.1f}%"
    if r.lo is None or r.hi is None:
        return text + " (no interval: one run, too few requests)"
    verdict = "clear" if r.significant else "within noise"
    return text + f" (95% CI {(r.lo - 1) * 100:+.1f}% to {(r.hi - 1) * 100:+.1f}%, {verdict})"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def knob_text(report: Report, config: str) -> str:
    """``budget=8 topk=4 window=2048``; the baseline's ``speculation off``; ``-`` when not recorded."""
    if config == report.reference and report.reference_is_baseline:
        return "speculation off"
    knobs = report.knobs.get(config)
    if knobs is None:
        return "-"
    shown = lambda v: "none" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
    return " ".join(f"{k}={shown(v)}" for k, v in knobs.items()) or "defaults"


def lossless_failed(report: Report) -> str | None:
    """The report's loudest line when a configuration changed the baseline's greedy outputs."""
    diverged = [r for r in report.lossless if r.diverged]
    if not diverged:
        return None
    return "LOSSLESS CHECK FAILED: " + "; ".join(
        f"{r.config} changed the greedy output of {r.diverged}/{r.prompts} prompts" for r in diverged)


def to_markdown(report: Report) -> str:
    ref = report.reference
    vs = "speedup vs baseline" if report.reference_is_baseline else f"ratio vs {ref}"
    out = ["# ddtune report", ""]
    if report.overall:
        o = report.overall
        ahead = f", ahead of {o.runner_up} by {margin_text(o.margin)}" if o.runner_up else ""
        out.append(f"**Best overall: {o.config}**{ahead}; geometric-mean tok/s {vs}: x{o.value:.2f}.")
        out.append("")
    failed = lossless_failed(report)
    if failed:
        out.append(f"**{failed}** (see \"lossless check\" below).")
        out.append("")
    for band in report.bands:
        out.append(f"**Best at {band_text(band)}: {band.config}**: `{band.up_command()}`")
    if report.bands:
        out.append("")
    out.append("Intervals are 95%: from repeats where a configuration ran more than once, else from per-request "
               "variation. ±: half-width. accept: all tokens / all verify steps of the cell, from the requests' own "
               "spec fields; (counters): the server's /metrics counters over the cell, (log): its Decode batch "
               "lines over the cell weighted by #running-req (sglang before 0.5.19 puts none on chat): the "
               "server's figures over all it ran, not per-request means. step gap: time "
               "between content chunks (one per decode or verify step); ITL/token: each gap divided by the tokens "
               "its chunk brought (sglang.bench_serving's ITL). shared: runs of the cell during which the server also "
               "served traffic that was not ddtune's (their figures are shared with that load).")
    out.append("")
    out.append("## configurations")
    out.append("")
    out += _table(["config", "knobs"], [[config, knob_text(report, config)] for config in report.configs])
    out.append("")
    for cell in report.cells:
        out.append(f"## {cell_title(cell)}")
        out.append("")
        rows = []
        for config in report.configs:
            r = report.row(config, cell)
            if r is None:
                continue
            rows.append([config, str(r.repeats), _est(r.tok_s), _ratio(r.vs_reference) if config != ref else "ref",
                         accept_text(r), _est(r.ttft_p50, ".0f"), _est(r.ttft_p95, ".0f"),
                         _est(r.itl_p50, ".1f"), _est(r.itl_p95, ".1f"), _est(r.itl_token_p50, ".1f"),
                         _est(r.itl_token_p95, ".1f"), str(r.errors),
                         f"{r.contended}/{r.repeats} CONTENDED" if r.contended else "-"])
        out += _table(["config", "runs", "tok/s", vs, "accept", "TTFT p50 ms", "TTFT p95 ms", "step gap p50 ms",
                       "step gap p95 ms", "ITL/token p50 ms", "ITL/token p95 ms", "errors", "shared"], rows)
        best = next((b for b in report.best_per_cell if b.cell == cell), None)
        if best:
            out.append("")
            out.append(f"best: **{best.config}** ({best.value:.1f} tok/s)" +
                       (f", ahead of {best.runner_up} by {margin_text(best.margin)}" if best.runner_up else ""))
        out.append("")
    out += datasets_markdown(report)
    out += bands_markdown(report)
    if report.pass_rates:
        out.append("## coding pass rate")
        out.append("")
        out += _table(["config", "pass", "rate", "95% CI"],
                      [[p.config, f"{p.passed}/{p.total}", f"{p.passed / p.total * 100:.0f}%",
                        f"{p.lo * 100:.0f}%-{p.hi * 100:.0f}%"] for p in report.pass_rates])
        out.append("")
    if report.lossless:
        out.append("## lossless check")
        out.append("")
        out.append("Greedy outputs of fixed prompts, token by token against the baseline's (docs/lossless.md).")
        out.append("")
        out += _table(["config", "runs compared", "diverged", "rate", "first difference at", "not compared"],
                      [[r.config, str(r.compared), f"{r.diverged}/{r.prompts}" if r.compared else "-",
                        f"{r.rate * 100:.0f}%" if r.rate is not None else "-",
                        ", ".join(map(str, r.first)) or "-", "; ".join(r.notes) or "-"] for r in report.lossless])
        out.append("")
    if report.failures:
        out.append("## failed configurations")
        out.append("")
        for f in report.failures:
            out.append(f"- {f.label} (run {f.repeat}): {f.reason.splitlines()[0] if f.reason else 'failed'}")
        out.append("")
    out += _lanes_markdown(report)
    c = report.restarts
    if c.count or c.sweep_s:
        out.append("## restarts")
        out.append("")
        line = f"{c.count} restart(s), {c.total_s:.1f} s in all"
        if c.median_s is not None:
            line += f", median {c.median_s:.1f} s"
        if c.sweep_s and report.lanes > 1:  # restarts ran side by side: share of the lanes' time
            line += (f"; {c.total_s / (c.sweep_s * report.lanes) * 100:.0f}% of the {report.lanes} lanes' "
                     f"{c.sweep_s:.1f} s each")
        elif c.sweep_s:
            line += f"; {c.total_s / c.sweep_s * 100:.0f}% of the sweep's {c.sweep_s:.1f} s"
        out.append(line)
        if c.phases_mean_s:
            out.append("mean per phase: " + ", ".join(f"{p} {v:.1f} s" for p, v in c.phases_mean_s.items()))
        out.append("")
    return plain("\n".join(out).rstrip() + "\n")  # names and reasons come from files: never a terminal's controls


def _lanes_markdown(report: Report) -> list[str]:
    """A parallel sweep: each run's lane and GPU, and a warning when the GPUs are not alike."""
    if not report.placements:
        return []
    out = ["## lanes", ""]
    for warning in report.gpu_warnings:
        out.append(f"**Warning: {warning}.**")
        out.append("")
    rows = []
    shared = any(p.shared for p in report.placements)  # the column only where a GPU was shared
    for p in sorted(report.placements, key=lambda p: (p.label, p.repeat)):
        names = ", ".join(sorted({str(d.get("name")) for d in p.devices if d.get("name")})) or "-"
        uuids = ", ".join(str(d.get("uuid")) for d in p.devices if d.get("uuid")) or "-"
        rows.append([p.label, str(p.repeat), str(p.lane), ",".join(p.gpus), names, uuids, p.status]
                    + (["shared" if p.shared else "own"] if shared else []))
    out += _table(["config", "run", "lane", "GPU", "model", "UUID", "status"] + (["GPU use"] if shared else []), rows)
    out.append("")
    return out


def to_json(report: Report) -> dict:
    e = lambda x: x.to_json() if x is not None else None
    best = lambda b: None if b is None else {"cell": list(b.cell[:2]) if b.cell else None, "config": b.config,
                                             "prompts": b.cell.prompts if b.cell else None,
                                             "request_rate": b.cell.rate if b.cell else None,
                                             "value": b.value, "runner_up": b.runner_up, "margin": e(b.margin)}
    return {
        "schema": "ddtune.report/1",
        "configs": list(report.configs),
        "knobs": {config: report.knobs.get(config) for config in report.configs},
        "reference": report.reference,
        "reference_is_baseline": report.reference_is_baseline,
        "cells": [{"context": r.cell[0], "concurrency": r.cell[1], "prompts": r.cell.prompts,
                   "request_rate": r.cell.rate, "config": r.config, "runs": r.repeats,
                   "requests": r.requests, "errors": r.errors, **{m: e(getattr(r, m)) for m in METRICS},
                   "vs_reference": e(r.vs_reference), "acceptance_source": r.acceptance_source,
                   "contended_runs": r.contended}
                  for r in report.rows],
        "best_per_cell": [best(b) for b in report.best_per_cell],
        "best_overall": best(report.overall),
        "overall_scores": dict(report.overall_scores),
        "pass_rates": [{"config": p.config, "passed": p.passed, "total": p.total, "lo": p.lo, "hi": p.hi}
                       for p in report.pass_rates],
        "failures": [{"config": f.label, "repeat": f.repeat, "reason": f.reason, "source": f.source}
                     for f in report.failures],
        "lossless": [{"config": r.config, "compared": r.compared, "prompts": r.prompts, "diverged": r.diverged,
                      "rate": r.rate, "first": list(r.first), "notes": list(r.notes)} for r in report.lossless],
        "placements": [{"config": p.label, "repeat": p.repeat, "lane": p.lane, "gpus": list(p.gpus),
                        "devices": list(p.devices), "status": p.status, "shared_gpu": p.shared}
                       for p in report.placements],
        "gpu_warnings": list(report.gpu_warnings),
        **datasets_json(report),
        "restarts": {"count": report.restarts.count, "total_s": report.restarts.total_s,
                     "median_s": report.restarts.median_s, "phases_mean_s": report.restarts.phases_mean_s,
                     "sweep_s": report.restarts.sweep_s},
    }


def to_csv(report: Report) -> str:
    """One row per configuration and cell; each estimate as mean, lo, hi columns."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["config", "context", "concurrency", "runs", "requests", "errors"]
    for m in METRICS:
        head += [m, f"{m}_lo", f"{m}_hi"]
    head += ["vs_reference", "vs_reference_lo", "vs_reference_hi", "best_in_cell", "pass", "total",
             "acceptance_source", "knobs", "prompts", "request_rate", "contended_runs"]
    w.writerow(head)
    best = {b.cell: b.config for b in report.best_per_cell}
    rates = {p.config: p for p in report.pass_rates}
    num = lambda v: "" if v is None else f"{v:.6g}"
    for r in report.rows:
        row = [r.config, r.cell[0], r.cell[1], r.repeats, r.requests, r.errors]
        for m in METRICS:
            est = getattr(r, m)
            row += [num(est.mean), num(est.lo), num(est.hi)] if est else ["", "", ""]
        v = r.vs_reference
        row += [num(v.value), num(v.lo), num(v.hi)] if v else ["", "", ""]
        p = rates.get(r.config)
        row += [int(best.get(r.cell) == r.config), p.passed if p else "", p.total if p else "",
                r.acceptance_source or "", knob_text(report, r.config), r.cell.prompts, num(r.cell.rate),
                r.contended]
        w.writerow(row)
    return plain(buf.getvalue())
