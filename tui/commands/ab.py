"""ddtune ab: quick A/B of two knob presets, interleaved."""

from __future__ import annotations

from tui.commands._options import count_option

HELP = "quick A/B of two knob presets, interleaved"
EXAMPLES = """\
examples:
  ddtune ab b8-t4-w2048 b8-t4-nowindow                 does the draft window pay off here?
  ddtune ab b8-t4-w2048 b8-t4-nowindow --rounds 4 --contexts 8192 --concurrency 8
  ddtune ab b8-t4-w2048 b8-t4-nowindow --prompts humaneval --contexts 8192   on HumanEval at 8k tokens
  ddtune ab --resume --out DIR                         continue an interrupted A/B

Runs A and B in serpentine order (A B B A A B ...), --rounds times each, one bench cell matrix per
run (default: context 4096, concurrency 8; with --prompts each prompt as it is), no coding eval
unless --eval, then prints the ratio B/A per cell with a 95% interval from the rounds. The folder
and resume work as in 'ddtune sweep'.
"""


def add_arguments(parser) -> None:
    from tui.commands._sweep import add_matrix_options

    parser.add_argument("a", nargs="?", metavar="A", help="first preset (the reference)")
    parser.add_argument("b", nargs="?", metavar="B", help="second preset")
    parser.add_argument("--rounds", type=count_option("repeats"), default=2, metavar="N",
                        help="runs of each (default 2)")
    parser.add_argument("--eval", action="store_true", help="also run the coding eval after each bench")
    add_matrix_options(parser, [4096], [8], 256)


def run(args) -> int:
    from backends.core import UsageError
    from tui.commands._sweep import run_sweep
    from tui.commands._traffic import traffic_fields

    plan = None
    if not args.resume:
        if not args.a or not args.b:
            raise UsageError("ddtune ab needs two presets", hint="ddtune ab b8-t4-w2048 b8-t4-nowindow")
        if args.a == args.b:
            raise UsageError(f"A and B are the same preset ({args.a})", hint="compare two different presets")
        plan = dict(repeats=args.rounds, contexts=args.contexts or ([0] if args.prompts else [4096]),
                    concurrency=args.concurrency or [8], max_tokens=args.max_tokens or 256,
                    requests_per_cell=args.requests_per_cell, warmup=args.warmup, run_eval=bool(args.eval),
                    traffic=traffic_fields(args))
    return run_sweep(args, [args.a, args.b], plan, "ab")
