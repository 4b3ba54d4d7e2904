"""The report's sections on what was sent: acceptance per dataset beside the papers (with the drift
flags) and the best configuration per concurrency band. Pure: strings and dicts out."""

from __future__ import annotations

from workloads.report.bands import Band
from workloads.report.compare import Report
from workloads.report.datasets import DatasetRow, Drift
from workloads.stats.estimate import Estimate


def _est(e: Estimate | None, fmt: str) -> str:
    if e is None:
        return "-"
    return format(e.mean, fmt) if e.half_width is None else f"{format(e.mean, fmt)} ±{format(e.half_width, fmt)}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def _section(title: str, intro: str, head: list[str], rows: list[list[str]]) -> list[str]:
    return [f"## {title}", "", intro, "", *_table(head, rows), ""]


def _ctx(context: int) -> str:
    return "as is" if context == 0 else str(context)


def drift_text(d: Drift) -> str:
    rate = f", {d.rate:g} req/s" if d.rate is not None else ""
    return (f"{d.config} on {d.prompts}, context {_ctx(d.context)}{rate}: acceptance {d.low[1]:.2f} at "
            f"concurrency {d.low[0]} and {d.high[1]:.2f} at {d.high[0]} ({d.spread * 100:+.1f}%): acceptance "
            "should not move with concurrency; a batch-dependent knob or a fault")


def datasets_markdown(report: Report) -> list[str]:
    if not report.datasets and not report.drifts:
        return []
    rows = []
    for r in report.datasets:
        v = r.verdict
        paper = "-" if v is None or v.figure is None else f"{v.figure.tau:.2f} ({v.figure.model}, {v.figure.drafter})"
        rows.append([r.cell.prompts or "-", r.dataset or "-", r.config, _ctx(r.cell.context),
                     str(r.cell.concurrency), "-" if r.cell.rate is None else f"{r.cell.rate:g}",
                     _est(r.acceptance, ".2f") + (f" ({r.acceptance_source})" if r.acceptance_source
                                                  not in (None, "request") else ""),
                     _est(r.tok_s, ".0f"), paper, "-" if v is None else v.comparable,
                     "-" if v is None else "; ".join(v.reasons) or "-"])
    out = _section("acceptance per dataset, beside the papers",
                   "Acceptance is a property of the prompts: each source on its own, beside the published tau of "
                   "the matching row (presets/papers.toml) and whether the two compare (model, drafter, block "
                   "size, temperature, template, natural stops; docs/workloads.md).",
                   ["prompts", "dataset", "config", "context", "conc", "rate", "accept", "tok/s", "paper tau",
                    "comparable", "why"], rows)
    for d in report.drifts:
        out.append(f"**DRIFT** {drift_text(d)}.")
    if report.drifts:
        out.append("")
    return out


def band_text(b: Band) -> str:
    return f"concurrency {b.low}" if b.low == b.high else f"concurrency {b.low}-{b.high}"


def bands_markdown(report: Report) -> list[str]:
    if not report.bands:
        return []
    rows = []
    for b in report.bands:
        mine = [s for s in b.scores if s.config == b.config]
        score = ", ".join(f"c{s.concurrency}: {s.score:.0f}" for s in mine)
        rows.append([band_text(b), b.config, score, str(min(len(s.values) for s in mine)), f"`{b.up_command()}`"])
    out = _section("best configuration per concurrency band",
                   "Per concurrency: the median of each configuration's repeats minus 1.4826 x MAD (at least 3 "
                   "repeats; a relative MAD above 0.1 is too noisy to win); within 1% the cheaper configuration "
                   "wins. SGLang's knobs are fixed at launch: launch the band's profile for the concurrency your "
                   "server sees.", ["band", "config", "score tok/s (median - 1.4826 MAD)", "repeats", "launch"], rows)
    rejected = sorted({f"{s.config} at c{s.concurrency}: {s.rejected}" for b in report.bands for s in b.scores
                       if s.rejected})
    if rejected:
        out += ["not eligible: " + "; ".join(rejected), ""]
    return out


def datasets_json(report: Report) -> dict:
    def row(r: DatasetRow) -> dict:
        return {"prompts": r.cell.prompts, "dataset": r.dataset, "config": r.config, "context": r.cell.context,
                "concurrency": r.cell.concurrency, "request_rate": r.cell.rate,
                "acceptance": r.acceptance.to_json() if r.acceptance else None,
                "acceptance_source": r.acceptance_source, "tok_s": r.tok_s.to_json() if r.tok_s else None,
                **(r.verdict.to_json() if r.verdict else {"comparable": None, "reasons": [], "paper": None})}

    return {"datasets": [row(r) for r in report.datasets],
            "drifts": [{"config": d.config, "prompts": d.prompts, "context": d.context, "request_rate": d.rate,
                        "low": {"concurrency": d.low[0], "acceptance": d.low[1]},
                        "high": {"concurrency": d.high[0], "acceptance": d.high[1]}, "spread": d.spread}
                       for d in report.drifts],
            "bands": [{"low": b.low, "high": b.high, "config": b.config, "knobs": b.knobs, "up": b.up_command(),
                       "scores": [{"config": s.config, "concurrency": s.concurrency, "values": list(s.values),
                                   "median": s.median, "mad": s.mad, "score": s.score, "rejected": s.rejected}
                                  for s in b.scores]} for b in report.bands]}
