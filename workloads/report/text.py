"""What ``ddtune report`` prints for its RUN arguments, and what the console's results screen shows
when a run is opened (Enter): the bench/sweep report (workloads/report/compare.py, render.py) for
sweeps, bench and eval runs, and the load report (workloads/report/load_runs.py) for load runs. Pure
over the runs' files; the screen calls it from a worker thread.
"""

from __future__ import annotations

import json
from pathlib import Path

from backends.core import UsageError
from workloads.report.compare import Report, build_report
from workloads.report.inputs import load_inputs, read_sweep
from workloads.report.load_runs import is_load_run, load_csv, load_json, load_markdown, read_load_run
from workloads.report.render import to_csv, to_json, to_markdown


def sweep_report(path: str | Path) -> Report:
    """One sweep folder's comparison: what ``ddtune report DIR`` prints for it, and what a sweep
    prints when it ends."""
    return build_report(read_sweep(Path(path)))


def report_text(runs: list[str], fmt: str = "md") -> str:
    loads = [read_load_run(Path(r).expanduser()) for r in runs if is_load_run(Path(r).expanduser())]
    others = [r for r in runs if not is_load_run(Path(r).expanduser())]
    report = build_report(load_inputs(others)) if others else None
    if report is not None and not report.rows and not report.failures and not loads:
        sweeps = [r for r in others if (Path(r).expanduser() / "sweep.json").is_file()]
        hint = (f"a sweep cut short continues with 'ddtune sweep --resume --out {sweeps[0]}'" if sweeps else
                "a bench run reports once it has finished a cell; an eval run reports beside the bench or sweep "
                "it graded; load runs (kind load) report on their own")
        raise UsageError("nothing to report: the runs hold no finished cells", hint=hint)
    has_cells = report is not None and bool(report.rows or report.failures)
    if fmt == "json":
        doc = to_json(report) if has_cells and report is not None else {}
        if loads:
            doc["load_runs"] = load_json(loads)
        return json.dumps(doc, indent=2) + "\n"
    if fmt == "csv":
        if has_cells and loads:
            raise UsageError("csv holds one kind of run: these are bench cells and load runs",
                             hint="report the load runs and the others separately, or use --format md or json")
        return load_csv(loads) if loads else to_csv(report) if report is not None else ""
    parts = [to_markdown(report)] if has_cells and report is not None else []
    if loads:
        parts.append(load_markdown(loads))
    return "\n".join(parts)
