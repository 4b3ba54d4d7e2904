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


def run(args) -> int:
    from workloads.report import report

    text = report(args.runs, args.format, out=args.out)
    if not args.out:
        sys.stdout.write(text)
    return 0
