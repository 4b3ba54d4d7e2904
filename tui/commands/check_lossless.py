"""ddtune check-lossless: greedy outputs with speculation must equal those without it."""

from __future__ import annotations

import sys

from tui.commands._options import add_server_options, count_option

HELP = "check that speculative decoding leaves greedy (temperature 0) outputs unchanged"
EXAMPLES = """\
examples:
  ddtune check-lossless --save-baseline base.json      against the server with speculation OFF: record
  ddtune check-lossless --baseline base.json           against each speculative config: compare
  ddtune check-lossless --prompts 8 --max-tokens 128 --save-baseline short.json
  ddtune check-lossless --baseline base.json --json    one JSON report on stdout

The prompts are the first N shipped coding problems, sent one at a time to /generate at
temperature 0. Outputs are compared by token id when the server returns output_ids (SGLang does),
else by whitespace-split words. Exit 0: no prompt diverged; 1: some did; 2: bad usage or baseline.
recipe: docs/lossless.md
"""

DEFAULT_PROMPTS = 16       # workloads/grading/lossless_check.py's defaults, named in --help
DEFAULT_MAX_TOKENS = 256


def add_arguments(parser) -> None:
    parser.add_argument("--prompts", type=count_option("requests"), default=None, metavar="N",
                        help=f"prompts to send (default: the baseline's, else {DEFAULT_PROMPTS})")
    parser.add_argument("--max-tokens", type=count_option("max_tokens"), default=None, metavar="N",
                        help=f"output tokens per prompt (default: the baseline's, else {DEFAULT_MAX_TOKENS})")
    parser.add_argument("--baseline", metavar="FILE",
                        help="compare with this baseline (recorded with --save-baseline, speculation off)")
    parser.add_argument("--save-baseline", metavar="FILE",
                        help="record the outputs of this non-speculative server as a baseline file")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document on stdout")
    add_server_options(parser)


def run(args) -> int:
    import json

    from tui.commands._options import server_url
    from workloads.grading import LosslessSpec, check_lossless

    if args.baseline and args.save_baseline:  # before the server is looked for
        spec = LosslessSpec("", baseline=args.baseline, save_baseline=args.save_baseline)
    else:
        url, api_key = server_url(args)
        spec = LosslessSpec(url, api_key, args.prompts, args.max_tokens, args.baseline, args.save_baseline)
    progress = _Progress(sys.stderr)
    try:
        outcome = check_lossless(spec, lambda e: progress.update(e.done, e.total))
    finally:
        progress.close()
    if outcome.unsure_spec:
        sys.stderr.write("warning: /server_info unreadable: make sure speculation was off for this baseline\n")
    if args.json:
        sys.stdout.write(json.dumps(outcome.to_json()) + "\n")
    else:
        sys.stdout.write(outcome.text() + "\n")
    return 1 if outcome.diverged else 0


class _Progress:
    """``prompt 3/16`` redrawn on a terminal; nothing otherwise."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        if self.tty:
            self.stream.write(f"\rprompt {done}/{total}")
            self.stream.flush()
            self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
