"""ddtune load: keep prompts in flight (the coding problems, or any source) and print windowed tok/s and acceptance.

The figures come from the load's one window engine (workloads/live/windows.py), as in the console:
each status line shows the 1 s and the rolling ``--window`` rate; ``--json`` adds the closed windows.
"""

from __future__ import annotations

import sys

from tui.commands._options import add_log_option, add_server_options, count_option, positive_float

HELP = "keep prompts in flight (coding, or --prompts SOURCE) and print windowed tok/s and acceptance"
EXAMPLES = """\
examples:
  ddtune load --concurrency 8                       until Ctrl-C, one status line per second
  ddtune load --concurrency 32 --duration 60 --max-tokens 1024
  ddtune load --concurrency 4 --duration 10 --show-requests --problems fib gcd
  ddtune load --concurrency 8 --duration 30 --json  one JSON summary on stdout at the end, with
                                                    tok/s and acceptance per 5 s window
  ddtune load --concurrency 8 --window 10           10 s rolling rates and windows
  ddtune load --concurrency 16 --prompts my-traffic.jsonl   your prompts, each as it is (not graded)
  ddtune load --concurrency 8 --prompts mt_bench.jsonl      multi-turn: each later turn after the live reply

tok/s is exact when the server sends token counts per chunk (SGLang does, asked with
stream_options.continuous_usage_stats); otherwise it counts chunks and says "approx".
acceptance says where it came from: (request) the requests' own spec fields, (counters) the server's
/metrics counters over the window, where chat carries no spec field (sglang before 0.5.19), (log) the
server log's Decode batch lines in the window, weighted by #running-req, without --enable-metrics.

every raw response is saved in $DDTUNE_STATE_DIR/runs/<time>-load/responses.jsonl
"""


def add_arguments(parser) -> None:
    parser.add_argument("--concurrency", type=count_option("concurrency"), required=True, metavar="C",
                        help="coding prompts kept in flight")
    parser.add_argument("--duration", type=positive_float, default=None, metavar="S",
                        help="stop after S seconds (default: run until Ctrl-C)")
    parser.add_argument("--max-tokens", type=count_option("max_tokens"), default=2048, metavar="N",
                        help="max tokens per answer (default 2048)")
    parser.add_argument("--prompts", metavar="SOURCE", default=None,
                        help="what to send: coding (default: the built-in problems, graded), story, humaneval, a "
                             "JSON/JSONL file in any format docs/workloads.md lists, or hf:NAME[:SPLIT]")
    parser.add_argument("--problems", nargs="+", metavar="ID",
                        help="ids of the prompts to cycle through (default: all of the source's)")
    parser.add_argument("--window", type=positive_float, default=5.0, metavar="S",
                        help="the rolling window of the rates, and the length of the JSON windows (default 5)")
    parser.add_argument("--show-requests", action="store_true", help="also print every finished request")
    parser.add_argument("--json", action="store_true", help="print only a JSON summary on stdout at the end")
    add_server_options(parser)
    add_log_option(parser)


def _f(value, fmt) -> str:
    return "-" if value is None else format(value, fmt)


def _span(seconds: float) -> str:
    return f"{seconds:g}s"


def status_line(s) -> str:  # s: the engine's LoadStats
    v = s.verdicts
    graded = sum(v.values())
    one, roll = s.window_1s, s.window_roll
    approx = "  (approx: counted by chunks)" if one.approx or roll.approx else ""
    source = roll.acceptance_source or one.acceptance_source
    return (f"t={s.elapsed_s:6.1f}s  in-flight {s.in_flight:3d}  tok/s 1s {one.tokens_per_s:8.1f} "
            f"{_span(roll.window_s)} {roll.tokens_per_s:8.1f}  accept 1s {_f(one.acceptance, '.2f')} "
            f"{_span(roll.window_s)} {_f(roll.acceptance, '.2f')}{f' ({source})' if source else ''}  "
            f"done {s.finished}  err {s.errors}  "
            f"pass {v.get('pass', 0)}/{graded}{approx}")


def run(args) -> int:
    import json
    from typing import assert_never

    from tui.commands._options import server_log, server_url
    from workloads.live import LoadSpec, RequestDone, StatsUpdated, run_load

    url, api_key = server_url(args)
    spec = LoadSpec(url, api_key, args.concurrency, args.max_tokens, args.duration, args.prompts,
                    tuple(args.problems) if args.problems else None, args.window, server_log(args, url))
    out = sys.stdout

    def on_event(event: StatsUpdated | RequestDone) -> None:
        match event:
            case StatsUpdated(stats):
                if not args.json:
                    out.write(status_line(stats) + "\n")
            case RequestDone():
                if args.show_requests and not args.json:
                    verdict = event.verdict if event.ok else f"request error: {event.detail}"
                    e2e = _f(event.e2e_s and event.e2e_s * 1000, "7.0f")
                    out.write(f"  {event.problem:<16} {verdict:<10} {event.tokens:5d} tok  "
                              f"accept {_f(event.accept_len, '.2f')}  {e2e} ms\n")
            case _:
                assert_never(event)
        out.flush()

    outcome = run_load(spec, on_event, note=sys.stderr.write)
    if args.json:
        out.write(json.dumps(outcome.to_json()) + "\n")
    else:
        approx = " (approx: counted by chunks)" if outcome.approx else ""
        acc = outcome.acceptance
        accept = f", acceptance {acc['total']:.2f} ({acc['source']})" if acc else ""
        out.write(f"{outcome.reason}: {outcome.prompts}: {outcome.finished} finished, {outcome.errors} errors, "
                  f"{_f(outcome.output_tok_s, '.1f')} tok/s overall{approx}{accept}; "
                  f"responses in {outcome.run_dir}\n")
    outcome.raise_if_failed()
    return 0
