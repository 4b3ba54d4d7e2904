"""ddtune search: find the best knob configuration of a space with few restarts."""

from __future__ import annotations

import sys

from tui.commands._options import count_option

HELP = "find the fastest knob configuration of a space, restarting as little as possible"
EXAMPLES = """\
examples:
  ddtune search --space 'budget=4,8,16 topk=2,4,6 window=1024,2048,none'
  ddtune search --space 'budget=4,8,16 topk=2,4,6' --target-context 16384 --target-concurrency 4
  ddtune search --space 'budget=4,8,16 window=1024,2048,none' --prompts my-traffic.jsonl --target-context 0
  ddtune search --space 'budget=8,12,16 window=2048,4096,none' --max-restarts 6 --out ~/search/box
  ddtune search --resume --out ~/search/box       continue an interrupted search where it stopped
  ddtune search --space '...' --passes 2          a second pass for knobs that interact
  ddtune search --space '...' --parallel 2 --gpus 0,1   measure each round on two servers at once

How it walks: from the configuration the server runs (else the middle of the space) it races
one knob's values with the others held, moves to the winner, then races the next knob (the order
of --space), so one pass starts 1 + sum(values - 1) configurations, not the grid's product
(7 of 27 above). A race is successive halving: every candidate gets --waves waves of the target
cell, the better half twice as many, and so on for --rungs rungs; it stops early once the leader's
lead is clear at 95%. A round measures the running configuration first and ends on its likely
winner, so the next round starts without a restart. Each wave (--target-concurrency requests sent
together) is one tok/s sample: intervals are Student-t over waves.
Restarts are counted and printed against a full grid's (one start per configuration); a restart
on a real GPU reloads the weights (minutes), so that is the number to watch.
exit: 0 a best configuration was found, 1 none ran, 2 bad usage, 130 interrupted (resume it).
--parallel N measures a round on N servers at once, each on its own GPUs and port (as sweep's lanes);
a re-measured configuration moves to another GPU so no one card decides a race (docs/search.md).
folder: search.json, rounds.jsonl, round-NN/ (a sweep folder per round), summary.json (docs/search.md).
"""


def add_arguments(parser) -> None:
    parser.add_argument("--space", metavar="SPACE",
                        help="knob=value,value,... per knob, space-separated; 'none' clears a knob "
                             "(e.g. 'budget=4,8,16 topk=2,4,6 window=1024,2048,none')")
    parser.add_argument("--target-context", type=count_option("context", 0), default=4096, metavar="C",
                        help="prompt tokens of the measured cell, real text; 0: each prompt as it is (default 4096)")
    parser.add_argument("--prompts", metavar="SOURCE", default=None,
                        help="what to send: coding, story (the default), humaneval, a JSON/JSONL file or "
                             "hf:NAME[:SPLIT] (docs/workloads.md); only first turns (a wave is one sample)")
    parser.add_argument("--ignore-eos", action="store_true",
                        help="keep generating past the model's stop (default: natural stops)")
    parser.add_argument("--target-concurrency", type=count_option("concurrency"), default=8, metavar="K",
                        help="requests in flight, released together as one wave (default 8)")
    parser.add_argument("--max-tokens", type=count_option("max_tokens"), default=256, metavar="N",
                        help="output tokens per request (default 256)")
    parser.add_argument("--waves", type=count_option("waves"), default=4, metavar="N",
                        help="waves per configuration in a race's first rung (default 4)")
    parser.add_argument("--rungs", type=count_option("rungs"), default=3, metavar="N",
                        help="successive-halving rungs per race; the last decides by the mean (default 3)")
    parser.add_argument("--passes", type=count_option("passes"), default=1, metavar="N",
                        help="passes over the knobs; a later pass re-races the lines a move changed (default 1)")
    parser.add_argument("--max-restarts", type=count_option("restarts"), default=None, metavar="R",
                        help="stop before a round would take the restarts past R (default: no cap)")
    parser.add_argument("--start", metavar="CONFIG",
                        help="where to start, e.g. 'budget=8 topk=4 window=2048' (default: the running "
                             "configuration when it is in the space, else the middle of the space)")
    parser.add_argument("--warmup", type=count_option("requests", 0), default=None, metavar="N",
                        help="unrecorded requests before each measured cell (default 1)")
    parser.add_argument("--out", metavar="DIR",
                        help="the search's folder (default: $DDTUNE_STATE_DIR/runs/<time>-search)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the interrupted search in --out DIR (default: the latest one)")
    parser.add_argument("--keep-server", action="store_true",
                        help="leave the last measured configuration running (default: return the server to "
                             "the config it ran before, or stop it when none was running)")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON document on stdout")
    parser.add_argument("--api-key", metavar="KEY", default=None, help="API key (default: $DDTUNE_API_KEY)")
    from tui.commands._lanes import add_lane_options

    add_lane_options(parser)


def request(args):
    """The options as the search's request (workloads.search.SearchRequest)."""
    from workloads.search import SearchRequest

    return SearchRequest(args.space or "", args.target_context, args.target_concurrency, args.max_tokens, args.waves,
                         args.rungs, args.passes, args.max_restarts, args.warmup, args.start, args.out,
                         prompts=args.prompts, ignore_eos=args.ignore_eos)


def run(args) -> int:
    import json

    from backends.core import UsageError
    from tui.commands._lanes import lane_options
    from tui.commands._server import err, load_config, note
    from tui.commands._sweep import until_done
    from tui.commands._sweep_print import LinePrinter
    from workloads.search import SearchSpec, SearchView, run_search

    if args.resume and (args.space or args.start):
        raise UsageError("--resume continues a search with its own space; it takes no --space or --start",
                         hint="ddtune search --resume --out DIR")
    spec = SearchSpec(load_config(args), None if args.resume else request(args), args.resume, args.out,
                      **lane_options(args), keep_server=args.keep_server,
                      api_key=args.api_key,
                      say=lambda done: err(f"search: {done}"), note=note)
    printer = LinePrinter(SearchView())
    outcome = until_done(lambda: run_search(spec, printer), printer, "search", "ddtune search", args.out)
    if outcome is None:
        return 130
    if args.json:
        sys.stdout.write(json.dumps(outcome.summary) + "\n")
    else:
        sys.stdout.write("\n".join(outcome.lines()) + "\n")
    return 0 if outcome.found else 1
