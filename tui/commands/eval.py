"""ddtune eval: run the coding eval against a server, or regrade saved raw responses offline."""

from __future__ import annotations

import sys

from tui.commands._options import add_server_options, count_option

HELP = "run the coding eval against a server, or regrade saved responses offline"
EXAMPLES = """\
examples:
  ddtune eval                                  all built-in problems against the configured server
  ddtune eval --problems fib gcd --max-tokens 4096 --concurrency 8
  ddtune eval --url http://127.0.0.1:30000 --out eval.json
  ddtune eval --resume                         continue the latest eval run (killed, or its server died)
  ddtune eval --resume ~/.local/state/ddtune/runs/20261130T100000Z-eval
                                               ask only the problems it has no graded answer for yet
  ddtune eval --regrade ~/.local/state/ddtune/runs/20261130T100000Z-eval/responses.jsonl
  ddtune eval --regrade responses.jsonl --json  one JSON document: results in input order + summary

regrade input: JSONL, one {"problem", "content", "reasoning_content", "finish_reason"} per line.
Inside a run directory only the answers of kept cells/problems are graded (a killed attempt's are
skipped); plain bench answers ("problem": null) are skipped and counted.
verdicts: pass, fail, error, timeout, no_code, truncated
"""


def add_arguments(parser) -> None:
    parser.add_argument("--problems", nargs="+", metavar="ID", help="problem ids to run (default: all)")
    parser.add_argument("--max-tokens", type=count_option("max_tokens"), default=4096, metavar="N",
                        help="max tokens per answer (default 4096)")
    parser.add_argument("--concurrency", type=count_option("concurrency"), default=4, metavar="C",
                        help="requests in flight (default 4)")
    parser.add_argument("--out", metavar="FILE", help="also write the results as one JSON document to FILE")
    parser.add_argument("--regrade", metavar="FILE", help="re-score saved raw responses (JSONL); needs no server")
    parser.add_argument("--resume", nargs="?", const="latest", metavar="RUN_DIR",
                        help="continue an eval run with its own plan (default: the latest eval run)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    add_server_options(parser)


def run(args) -> int:
    import json

    from workloads.grading import EvalSpec, run_eval

    if args.regrade:
        spec = EvalSpec(regrade=args.regrade, resume=args.resume, out=args.out)
    else:
        from tui.commands._options import server_url

        url, api_key = server_url(args)
        spec = EvalSpec(url, api_key, tuple(args.problems) if args.problems else None, args.max_tokens,
                        args.concurrency, args.resume, out=args.out)
    quiet = args.json or args.regrade
    try:
        outcome = run_eval(spec, None if quiet else
                           lambda e: sys.stderr.write(f"[{e.done}/{e.total}] {e.grade.problem}: {e.grade.verdict}\n"))
    except KeyboardInterrupt:
        from tui.commands._resume import say_interrupted

        return say_interrupted("eval")
    for note in outcome.notes:
        sys.stderr.write(note + "\n")
    doc = outcome.to_json()
    if args.json:
        sys.stdout.write(json.dumps(doc) + "\n")
        return 0
    _print_grades(doc)
    if outcome.skipped is not None:
        if outcome.skipped.non_coding:
            sys.stdout.write(f"skipped {outcome.skipped.non_coding} non-coding responses (plain bench prompts)\n")
        if outcome.skipped.not_kept:
            sys.stdout.write(f"skipped {outcome.skipped.not_kept} responses of attempts whose cell or problem was "
                             "not kept (killed mid-run, then redone)\n")
    else:
        sys.stdout.write(f"raw responses: {outcome.run_dir}/responses.jsonl\n")
    return 0


def _print_grades(doc: dict) -> None:
    results = doc["results"]
    width = max([len("problem")] + [len(r["problem"]) for r in results])
    out = [f"{'problem':<{width}}  {'verdict':<9}  detail"]
    for r in results:
        out.append(f"{r['problem']:<{width}}  {r['verdict']:<9}  {r['detail']}")
    summary = doc["summary"]
    total = sum(summary.values())
    out.append("")
    out.append(f"pass {summary.get('pass', 0)}/{total}  " + "  ".join(
        f"{k} {v}" for k, v in summary.items() if k != "pass" and v))
    sys.stdout.write("\n".join(out) + "\n")
