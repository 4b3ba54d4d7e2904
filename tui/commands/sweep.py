"""ddtune sweep: benchmark several knob presets, restarting only when knobs change."""

from __future__ import annotations

from tui.commands._options import count_option

HELP = "benchmark several knob presets, restarting only when knobs change"
EXAMPLES = """\
examples:
  ddtune sweep b8-t4-w2048 b16-t4-w2048 b4-t4-w2048 --baseline
  ddtune sweep b8-t4-w2048 b12-t6-w2048 --repeats 3 --contexts 4096 --concurrency 8 --no-eval
  ddtune sweep b8-t4-w2048 b16-t4-w2048 --prompts my-traffic.jsonl --concurrency 1 8 32 --repeats 3
                                                       your prompts; report names the best per concurrency band
  ddtune sweep --plan sweep.toml --out ~/sweeps/qwen-box
  ddtune sweep --resume --out ~/sweeps/qwen-box        continue where an interrupted sweep stopped
  ddtune report ~/sweeps/qwen-box --format csv          the comparison again, in another format
  ddtune sweep b8-t4-w2048 b16-t4-w2048 --parallel 2     two servers at once, one per free GPU
  ddtune sweep --plan sweep.toml --parallel 4 --gpus 0,1,2,3,4,5,6,7 --gpus-per-server 2

For each configuration: restart the configured server only when its knobs differ from what runs,
wait for readiness, verify the knobs took effect, warm up, run the bench matrix and the coding eval.
--repeats N runs in rounds, every other round reversed (A B C C B A ...), so drift cancels out and
round edges save a restart. A configuration that fails to start or verify is recorded as failed and
the sweep goes on. At the end, and on Ctrl-C/SIGTERM, the server is left as the sweep found it:
back on the knobs it ran before (restarted if the sweep changed them), or stopped when none was
running; with --parallel every lane server the sweep started is stopped. --keep-server leaves the
last configuration's server running instead. After a hard kill (SIGKILL) the server keeps running
and --resume re-attaches to it.
--parallel N runs up to N servers at once, each on its own GPUs (CUDA_VISIBLE_DEVICES) and port
(base + i); with --repeats each configuration's runs rotate across the GPUs, and the report names
each run's GPU (docs/scale.md). `ddtune down` stops every lane server a sweep left running.
exit: 0 all runs done, 1 some configuration failed (see the report), 2 bad usage, 130 interrupted.
folder: sweep.json, slots.jsonl, one sub-folder per run (bench/, <time>-eval/), and with --baseline
lossless-baseline.json (each run's lossless check is in its slots.jsonl record).
"""


def add_arguments(parser) -> None:
    from tui.commands._sweep import add_matrix_options

    parser.add_argument("presets", nargs="*", metavar="PRESET",
                        help="knob presets: shipped names (b8-t4-w2048, ...) or preset .toml files")
    parser.add_argument("--plan", metavar="FILE",
                        help="a TOML sweep plan (presets, configs, matrix; see docs/sweeps.md)")
    parser.add_argument("--repeats", type=count_option("repeats"), default=None, metavar="N",
                        help="runs of each configuration, interleaved (default 1)")
    parser.add_argument("--baseline", action="store_true",
                        help="add a speculation-off run, report speedups against it and check each "
                             "configuration's greedy output against its own (docs/lossless.md)")
    parser.add_argument("--no-eval", action="store_true", help="skip the coding eval after each bench")
    parser.add_argument("--eval-max-tokens", type=count_option("max_tokens"), default=None, metavar="N",
                        help="max tokens per coding answer (default 4096)")
    parser.add_argument("--eval-problems", nargs="+", metavar="ID", default=None,
                        help="only these coding problems (default: all)")
    parser.add_argument("--coding", action="store_true", help="bench with the coding prompts and grade them")
    add_matrix_options(parser, [1024, 4096], [1, 8], 512)
    from tui.commands._lanes import add_lane_options

    add_lane_options(parser)


def run(args) -> int:
    from backends.core import UsageError
    from tui.commands._sweep import run_sweep
    from tui.commands._traffic import traffic_fields

    plan = None
    if args.resume:
        if args.presets or args.plan:
            raise UsageError("--resume continues a sweep with its own plan; it takes no PRESET or --plan",
                             hint="ddtune sweep --resume --out DIR")
    else:
        if not args.presets and not args.plan:
            raise UsageError("name the presets to compare",
                             hint="ddtune sweep b8-t4-w2048 b16-t4-w2048 (or --plan FILE)")
        plan = dict(plan_file=args.plan, repeats=args.repeats, baseline=args.baseline,
                    contexts=args.contexts, concurrency=args.concurrency, max_tokens=args.max_tokens,
                    requests_per_cell=args.requests_per_cell, warmup=args.warmup, coding=args.coding,
                    run_eval=False if args.no_eval else None, eval_max_tokens=args.eval_max_tokens,
                    eval_problems=args.eval_problems, traffic=traffic_fields(args))
    return run_sweep(args, args.presets, plan, "sweep")
