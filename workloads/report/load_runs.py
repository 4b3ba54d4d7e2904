"""Load runs (kind ``load``: ``ddtune load`` and the console's coding load) in ``ddtune report`` and in
the console's results screen: each run's summary and windows, and two load runs side by side. Pure
over the run's files (docs/results-schema.md: a load run's ``summary`` is workloads/live/record.py's
``load_summary``; ``windows`` only in ``ddtune load``'s runs, not the console's).
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass
from pathlib import Path

from backends.core import warn
from backends.core import plain
from workloads.report.inputs import knob_label, read_run_file
from workloads.runs.checks import clean_numbers

MAX_WINDOWS = 60  # a long run's markdown shows its last windows; the JSON has them all


@dataclass(frozen=True)
class LoadRun:
    path: str
    id: str
    label: str          # the server's knobs (b8-t4-w2048), else the run's id
    status: str
    source: str         # "console" or "cli"
    summary: dict
    windows: tuple[dict, ...]

    def number(self, key: str) -> float | None:
        value = self.summary.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def acceptance(self) -> float | None:
        acc = self.summary.get("acceptance")
        total = acc.get("total") if isinstance(acc, dict) else None
        return float(total) if isinstance(total, (int, float)) else None

    @property
    def verdicts(self) -> dict[str, int]:
        found = self.summary.get("verdicts")
        return {str(k): v for k, v in found.items() if isinstance(v, int)} if isinstance(found, dict) else {}

    @property
    def pass_rate(self) -> float | None:
        graded = sum(self.verdicts.values())
        return self.verdicts.get("pass", 0) / graded if graded else None

    def window_median(self, key: str) -> float | None:
        values = [float(w[key]) for w in self.windows if isinstance(w.get(key), (int, float))]
        return statistics.median(values) if values else None


def is_load_run(path: Path) -> bool:
    """A run folder whose run.json says kind ``load`` (a corrupt run.json: not one; the report names it)."""
    if not (path / "run.json").is_file():
        return False
    try:
        return read_run_file(path / "run.json").get("kind") == "load"
    except Exception:  # noqa: BLE001 - the caller's reader reports the bad file
        return False


def _obj(doc: dict, key: str) -> dict:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def read_load_run(path: Path) -> LoadRun:
    run = read_run_file(path / "run.json")
    dropped: list[str] = []
    summary = clean_numbers(_obj(run, "summary"), "summary", dropped)
    if dropped:  # an edited or foreign value costs only itself: shown as "-"
        warn(f"{path / 'run.json'}: left out implausible numbers (not finite, negative or too large) at "
             f"{', '.join(dropped[:5])}{' ...' if len(dropped) > 5 else ''}")
    windows = summary.get("windows")
    knobs = _obj(run, "server").get("knobs")
    name = str(run.get("id", path.name))
    return LoadRun(str(path), name, knob_label(knobs if isinstance(knobs, dict) else None) or name,
                   str(run.get("status", "?")), str(run.get("source") or "cli"), summary,
                   tuple(w for w in windows if isinstance(w, dict)) if isinstance(windows, list) else ())


def _f(value: float | None, fmt: str = ".0f") -> str:
    return "-" if value is None else format(value, fmt)


def _ratio(a: float | None, b: float | None) -> str:
    return f"{b / a:.2f}x" if a and b is not None else "-"


def summary_rows(run: LoadRun) -> list[tuple[str, str]]:
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted(run.verdicts.items())) or "none graded"
    rows = [("status", run.status + (" (console)" if run.source == "console" else "")),
            ("stopped because", str(run.summary.get("reason") or "-")),
            ("requests finished", _f(run.number("finished"))), ("errors", _f(run.number("errors"))),
            ("cancelled (restarts)", _f(run.number("cancelled"))),
            ("output tok/s", _f(run.number("output_tok_s"), ".1f")),
            ("acceptance (tokens / verify step)", _f(run.acceptance, ".2f")),
            ("pass rate", "-" if run.pass_rate is None else f"{run.pass_rate:.0%} ({verdicts})"),
            ("sent requests for", f"{_f(run.number('elapsed_s'), '.1f')} s")]
    if run.summary.get("error"):
        rows.insert(2, ("error", str(run.summary["error"])))
    return rows


def window_rows(run: LoadRun) -> list[tuple[str, str, str]]:
    return [(_f(w.get("t_s") if isinstance(w.get("t_s"), (int, float)) else None, ".0f"),
             _f(w.get("tok_s") if isinstance(w.get("tok_s"), (int, float)) else None, ".1f"),
             _f(w.get("acceptance") if isinstance(w.get("acceptance"), (int, float)) else None, ".2f"))
            for w in run.windows[-MAX_WINDOWS:]]


def compare_loads(a: LoadRun, b: LoadRun) -> list[tuple[str, str, str, str]]:
    """What two load runs share: their summaries, and their windows' medians where both have windows.
    Rows of (measure, A, B, B/A)."""
    rows = [("output tok/s (whole run)", _f(a.number("output_tok_s"), ".1f"), _f(b.number("output_tok_s"), ".1f"),
             _ratio(a.number("output_tok_s"), b.number("output_tok_s"))),
            ("acceptance", _f(a.acceptance, ".2f"), _f(b.acceptance, ".2f"), _ratio(a.acceptance, b.acceptance)),
            ("pass rate", _f(None if a.pass_rate is None else a.pass_rate * 100, ".0f"),
             _f(None if b.pass_rate is None else b.pass_rate * 100, ".0f"), _ratio(a.pass_rate, b.pass_rate)),
            ("requests finished", _f(a.number("finished")), _f(b.number("finished")), ""),
            ("errors", _f(a.number("errors")), _f(b.number("errors")), "")]
    if a.windows and b.windows:
        ta, tb = a.window_median("tok_s"), b.window_median("tok_s")
        rows.insert(1, ("output tok/s (median window)", _f(ta, ".1f"), _f(tb, ".1f"), _ratio(ta, tb)))
    return rows


def _table(head: list[str], rows: list) -> list[str]:
    return (["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def load_markdown(runs: list[LoadRun]) -> str:
    out = ["# ddtune report: load runs", ""]
    if len(runs) == 2:
        a, b = runs
        out += [f"A = {a.id} ({a.label}), B = {b.id} ({b.label}): compared on their summaries"
                + (" and median windows" if a.windows and b.windows else "") + ".", ""]
        out += _table(["measure", "A", "B", "B/A"], compare_loads(a, b)) + [""]
    for run in runs:
        out += [f"## {run.id}: {run.label}", "", f"folder: {run.path}", ""]
        out += _table(["", ""], summary_rows(run)) + [""]
        if run.windows:
            window_s = run.summary.get("window_s")
            shown = "" if len(run.windows) <= MAX_WINDOWS else f" (the last {MAX_WINDOWS} of {len(run.windows)})"
            out += [f"Windows of {window_s} s{shown}:", ""]
            out += _table(["t (s)", "tok/s", "accept"], window_rows(run)) + [""]
        else:
            out += ["No windows recorded (the console's load runs keep the summary only).", ""]
    return plain("\n".join(out))  # names and reasons come from files: never a terminal's controls


def load_json(runs: list[LoadRun]) -> list[dict]:
    return [{"id": r.id, "path": r.path, "label": r.label, "status": r.status, "source": r.source,
             "summary": r.summary} for r in runs]


def load_csv(runs: list[LoadRun]) -> str:
    """One row per window (or per run without windows), through a CSV writer: a label with a comma,
    a quote or a line break (a knob's value) is quoted, never a shifted column."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(["run", "label", "t_s", "tok_s", "acceptance"])
    for run in runs:
        for w in run.windows:
            out.writerow([run.id, run.label, w.get("t_s"), w.get("tok_s"), w.get("acceptance")])
        if not run.windows:
            out.writerow([run.id, run.label, None, run.summary.get("output_tok_s") or None, run.acceptance or None])
    return plain(buf.getvalue())
