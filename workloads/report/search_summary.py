"""A knob search's summary (summary.json, what ``ddtune search`` prints at its end) as lines for people.
Pure over the stored document, so ``ddtune report`` and the console's results screen render a search
read back without the search family (which sits above this one and prints the same lines)."""

from __future__ import annotations

from pathlib import Path

from workloads.runs.store import home_short
from workloads.stats.estimate import Estimate, Ratio


def search_rounds(path: Path) -> list[Path]:
    """A knob search folder's rounds, in order: each a sweep folder ``ddtune report`` reads."""
    return sorted(p for p in path.glob("round-*") if (p / "sweep.json").is_file())


def tok_text(est: Estimate | dict | None) -> str:
    if est is None:
        return "no data"
    data = est.to_json() if isinstance(est, Estimate) else est
    interval = f" [{data['lo']:.0f}, {data['hi']:.0f}]" if data.get("lo") is not None else ""
    return f"{data['mean']:.0f} tok/s{interval}"


def pct(r: Ratio | dict | None) -> str:
    if r is None:
        return "no margin"
    data = r.to_json() if isinstance(r, Ratio) else r
    text = f"{(data['value'] - 1) * 100:+.1f}%"
    if data.get("lo") is not None and data.get("hi") is not None:
        text += f" [{(data['lo'] - 1) * 100:+.1f}%, {(data['hi'] - 1) * 100:+.1f}%]"
    return text


def _on(measured: dict) -> str:
    """', on lane 0 (GPU 0) 4 + lane 1 (GPU 1) 8': where a parallel search measured a configuration."""
    parts = [f"lane {p['lane']} (GPU {','.join(p['gpus'])}) {p['waves']}" for p in measured.get("lanes") or ()]
    return f"; waves on {' + '.join(parts)}" if parts else ""


def _restart_seconds(restarts: dict, lanes: int) -> str:
    """'; 5.5 s restarting, a grid would spend about 17 s'; on lanes both are sums over the lanes
    (serial seconds), and the grid's wall time on as many lanes follows."""
    summed = f" summed over {lanes} lanes" if lanes > 1 else ""
    spent = f"; {restarts['seconds']:.1f} s restarting{summed}" if restarts["seconds"] else ""
    if not restarts["grid_estimate_s"]:
        return spent
    grid = f"{', a' if spent else '; a'} grid would spend about {restarts['grid_estimate_s']:.0f} s"
    wall = restarts.get("grid_wall_estimate_s")
    if lanes > 1 and wall:
        grid += f" summed (about {wall:.0f} s of wall time on {lanes} lanes)"
    return spent + grid


def summary_lines(summary: dict) -> list[str]:
    best, rival, restarts = summary["best"], summary["rival"], summary["restarts"]
    lines = []
    if best is None:
        lines.append("search found no configuration that ran (see the failures above)")
    else:
        lines.append(f"best: {best['label']}: {tok_text(best['tok_s'])} ({best['waves']} waves{_on(best)})")
        if rival is not None:
            verdict = "clear at 95%" if summary["clear"] else "not clear at 95%"
            lines.append(f"  ahead of {rival['label']} ({tok_text(rival['tok_s'])}{_on(rival)}) by "
                         f"{pct(summary['margin'])}: {verdict}")
        if summary.get("fairness"):
            lines.append(f"  warning: {summary['fairness']}")
    lanes = summary.get("lanes") or 1
    lines.append(f"restarts: {restarts['used']} of a full grid's {restarts['grid']} "
                 f"({restarts['share']:.0%}){_restart_seconds(restarts, lanes)}")
    took = f" in {summary['wall_s']:.1f} s" if summary.get("wall_s") is not None else ""
    across = f" on {lanes} lanes (restarts summed over them)" if lanes > 1 else ""
    lines.append(f"measured {len(summary['measured'])} of {restarts['grid']} configurations in "
                 f"{summary['rounds']} round(s){took}{across}; folder {home_short(summary['path'])}")
    if summary["stop_reason"]:
        lines.append(f"stopped early: {summary['stop_reason']}")
    if best is not None:
        sets = " ".join(f"--set {k}={'none' if v is None else v}" for k, v in best["knobs"].items())
        lines.append(f"run it: ddtune up {sets}")
    return lines
