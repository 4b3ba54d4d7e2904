"""ddtune report: compare runs side by side with ratios and confidence intervals."""

from __future__ import annotations

import sys

HELP = "compare runs side by side with ratios and confidence intervals"
EXAMPLES = """\
examples:
  ddtune report ~/.local/state/ddtune/runs/20261130T101500Z-sweep      a sweep's output folder
  ddtune report ~/.local/state/ddtune/runs/20261130T110000Z-search     a knob search: its summary and rounds
  ddtune report runs/*-bench --format csv > cells.csv                    bench runs, one per config
  ddtune report bench-a.json bench-b.json --json                         files from 'ddtune bench --out'
  ddtune report runs/20261130T090000Z-load runs/20261130T091500Z-load    two load runs, B/A

RUN is a sweep folder (sweep.json), a knob search folder (search.json: its summary, then its
rounds reported together, each round a sweep), a bench run folder (run.json + cells.jsonl), an eval run
folder (adds the pass rate), a 'ddtune bench --out' file, or a load run folder ('ddtune load' or
the console's coding load: its summary and windows; two load runs side by side with B/A).
Runs with the same configuration are treated as repeats. Shows each configuration's knob values,
then per cell: tok/s, acceptance (with its source where it is not the requests' own:
"(counters)" the server's /metrics over the cell, "(log)" its Decode batch lines; the server's
figures, with intervals from repeats only), TTFT/ITL p50/p95 with 95% intervals (from repeats,
else per-request variation), the ratio to the baseline (or the first config), the best
configuration per cell and overall with its margin, failed configurations, and restart costs.
"""


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="sweep folder, run folder or bench JSON file")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--format", choices=("md", "csv", "json"), default="md",
                     help="md (default): tables for a terminal or a PR; csv: one row per config and cell; json")
    fmt.add_argument("--json", dest="format", action="store_const", const="json",
                     help="one JSON document on stdout (the same as --format json)")
    parser.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")


def render(runs: list[str], fmt: str) -> str:
    import json

    from workloads.report import report_text

    runs, searches = expand_searches(runs)
    text = report_text(runs, fmt)
    if not searches:
        return text
    if fmt == "json":
        return json.dumps({**json.loads(text), "searches": [doc for doc, _ in searches]}, indent=2) + "\n"
    if fmt == "md":
        return "".join(f"# knob search {doc['path']}\n\n" + "\n".join(f"    {line}" for line in lines) + "\n\n"
                       for doc, lines in searches) + text
    return text


def expand_searches(runs: list[str]) -> tuple[list[str], list[tuple[dict, list[str]]]]:
    """A knob search folder stands for its rounds (each a sweep folder, reported together) and brings
    its summary (what ``ddtune search`` printed at the end) with it."""
    from pathlib import Path

    from backends.core import UsageError
    from workloads.report import read_run_file, status_of

    out: list[str] = []
    searches: list[tuple[dict, list[str]]] = []
    for run in runs:
        path = Path(run).expanduser()
        if not (path / "search.json").is_file():
            out.append(run)
            continue
        rounds = sorted(str(p) for p in path.glob("round-*") if (p / "sweep.json").is_file())
        resume = f"ddtune search --resume --out {run}"
        if not rounds:
            raise UsageError(f"{run}: a knob search with no round measured yet", hint=f"continue it: {resume}")
        out += rounds
        if (path / "summary.json").is_file():
            from workloads.search import summary_lines

            summary = read_run_file(path / "summary.json")
            searches.append(({"path": run, "summary": summary}, summary_lines(summary)))
        else:
            status = status_of(read_run_file(path / "search.json"))
            searches.append(({"path": run, "status": status}, [f"{status}: continue it with `{resume}`"]))
    return out, searches


def run(args) -> int:
    if args.out:
        from backends.core import check_output

        check_output(args.out)  # refused before the runs are read
    text = render(args.runs, args.format)
    if args.out:
        from backends.core import write_atomic

        write_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    return 0
