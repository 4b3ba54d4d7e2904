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

DEFAULT_PROMPTS = 16
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
    import asyncio
    import dataclasses
    import os

    from backends.core import UsageError, check_output
    from tui.commands._options import server_url
    from workloads.grading import (baseline_doc, baseline_prompts, check_matches, compare_outputs, load_problems,
                                   read_baseline, record_outputs, write_baseline)

    if args.baseline and args.save_baseline:
        raise UsageError("--baseline checks against a baseline, --save-baseline records one: give one of them",
                         hint="record with speculation off (--save-baseline), then check each config (--baseline)")
    if args.save_baseline:
        if not os.path.isdir(os.path.dirname(os.path.abspath(args.save_baseline))):
            raise UsageError(f"--save-baseline {args.save_baseline}: its directory does not exist",
                             hint="create the directory or pick another path")
        check_output(args.save_baseline)  # a link or another user's folder: refused before the server is asked
    url, api_key = server_url(args)
    baseline = read_baseline(args.baseline) if args.baseline else None
    if baseline is not None and args.max_tokens is not None and args.max_tokens != baseline.max_tokens:
        raise UsageError(f"--max-tokens {args.max_tokens}: the baseline was recorded with {baseline.max_tokens}",
                         hint="leave --max-tokens out to use the baseline's, or record a new baseline")
    n = args.prompts or (len(baseline.outputs) if baseline else DEFAULT_PROMPTS)
    if baseline is not None and n > len(baseline.outputs):
        raise UsageError(f"--prompts {n}: only {len(baseline.outputs)} in the baseline {baseline.path}",
                         hint="use fewer prompts, or record a baseline with more (--save-baseline FILE --prompts N)")
    if baseline is not None and n < len(baseline.outputs):  # the first N of the baseline's prompts
        baseline = dataclasses.replace(baseline, outputs=baseline.outputs[:n])
    max_tokens = baseline.max_tokens if baseline else (args.max_tokens or DEFAULT_MAX_TOKENS)
    items = baseline_prompts(load_problems(), n)

    def admit(ident: dict) -> None:
        """Stop before sending anything when the server and the request do not fit together."""
        if baseline is not None:
            check_matches(baseline, ident["model"], items)
            return
        if ident["speculative"]:
            raise UsageError(f"the server runs speculative decoding ({ident['algorithm']}): a check compares it "
                             "with a baseline recorded with speculation off",
                             hint="pass --baseline FILE; record FILE first with '--save-baseline FILE' against "
                                  "the server with speculation off (docs/lossless.md)")
        if not args.save_baseline:
            what = ("the server runs without speculation" if ident["speculative"] is False
                    else "the server's /server_info cannot be read, so whether it speculates is unknown")
            raise UsageError(f"nothing to compare: {what} and no --baseline was given",
                             hint="record this server's outputs as the baseline with --save-baseline FILE, "
                                  "or check a speculative server with --baseline FILE")

    progress = _Progress(sys.stderr)
    ident, outputs, unit = asyncio.run(record_outputs(url, api_key, items, max_tokens, admit, progress.update))
    progress.close()
    if baseline is None:
        write_baseline(args.save_baseline, baseline_doc(ident, outputs, unit, max_tokens, url))
        if ident["speculative"] is None:
            sys.stderr.write("warning: /server_info unreadable: make sure speculation was off for this baseline\n")
        summary = {"saved_baseline": args.save_baseline, "prompts": len(outputs), "max_tokens": max_tokens,
                   "unit": unit, "model": ident["model"]}
        if args.json:
            import json

            sys.stdout.write(json.dumps(summary) + "\n")
        else:
            sys.stdout.write(f"baseline of {len(outputs)} prompts x {max_tokens} max tokens ({_unit(unit)}) from "
                             f"{ident['model']} saved to {args.save_baseline}\n")
        return 0
    report = compare_outputs(baseline, outputs, unit)
    report.update(server={"url": url, "speculative": ident["speculative"], "algorithm": ident["algorithm"],
                          "version": ident["version"]})
    if args.json:
        import json

        sys.stdout.write(json.dumps(report) + "\n")
    else:
        sys.stdout.write(format_report(report) + "\n")
    return 1 if report["diverged"] else 0


def _unit(unit: str) -> str:
    return "by token id" if unit == "token_ids" else "by whitespace-split word: the server returned no output_ids"


def format_report(report: dict) -> str:
    server = report["server"]
    spec = server.get("algorithm") or ("no speculation" if server.get("speculative") is False else "speculation ?")
    lines = [f"lossless check: {report['prompts']} prompts x {report['max_tokens']} max tokens, {spec} at "
             f"{server['url']} vs baseline {report['baseline']} ({report['model']}); compared {_unit(report['unit'])}"]
    width = max(len(r["id"]) for r in report["results"])
    for r in report["results"]:
        if r["diverged"]:
            what = (f"DIVERGES at position {r['first_difference']} (baseline {r['baseline_tokens']}, "
                    f"now {r['tokens']} tokens)")
        else:
            what = f"same ({r['tokens']} tokens)"
        lines.append(f"  {r['id']:<{width}}  {what}")
    rate = report["divergence_rate"]
    lines.append(f"diverged: {report['diverged']}/{report['prompts']} prompts ({rate:.0%})"
                 + ("" if report["diverged"] else ": lossless on these prompts"))
    return "\n".join(lines)


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
