"""ddtune bench: run the benchmark matrix (prompts x contexts x concurrency x rate) against a server."""

from __future__ import annotations

import sys

from tui.commands._options import add_log_option, add_server_options, count_option
from tui.commands._traffic import add_traffic_options

HELP = "run the benchmark matrix (prompts x contexts x concurrency x rate) against a server"
EXAMPLES = """\
examples:
  ddtune bench --prompts my-traffic.jsonl --concurrency 1 8 32     your prompts, each as it is
  ddtune bench --prompts humaneval mt_bench.jsonl --contexts 8192 --concurrency 1 8
                                         two sets, each brought to 8192 tokens with real text
  ddtune bench --prompts sharegpt.json --request-rate 2 4 --concurrency 64 --slo ttft_ms=500,tpot_ms=50
                                         Poisson arrivals at 2 and 4 req/s, goodput against the SLO
  ddtune bench --contexts 60 1024 4096 8192 --concurrency 1 8 32 64 --max-tokens 512
  ddtune bench --contexts 60 1024 --concurrency 1 8 --coding          also grade coding answers
  ddtune bench --url http://127.0.0.1:30000 --requests-per-cell 32 --warmup 2 --out bench.json
  ddtune bench --concurrency 32 64 --release staggered   keep every slot busy, as sglang.bench_serving does
  ddtune bench --resume                  continue the latest unfinished bench run
  ddtune bench --resume RUN_DIR          continue that run (its plan is reused)

Prompts are sent as their source wrote them (the last user message verbatim, earlier turns as
history) unless --contexts brings them to a size: with real text, never filler (a coding set: whole
standard-library files before the task; a chat set: its own earlier turns, then Python's docs),
counted by the server. Requests stop where the model stops (no ignore_eos unless --ignore-eos). Each
cell names its prompts, the share that hit --max-tokens, degenerate answers (left out of acceptance),
and whether the server served someone else's traffic meanwhile (contended).

results: $DDTUNE_STATE_DIR/runs/<time>-bench/ (run.json, cells.jsonl, responses.jsonl);
schema: docs/results-schema.md; prompt formats and how to compare with the papers: docs/workloads.md
Exit 0 when the run finished, 1 when the server stopped answering or every request failed (the first
error is named). A stream is read within bounds: DDTUNE_IDLE_S seconds at most without a byte
(default 900), that plus 0.5 s per --max-tokens token in all, bytes and line length from --max-tokens.
"""


def add_arguments(parser) -> None:
    parser.add_argument("--contexts", type=count_option("context", 0), nargs="+", default=None, metavar="TOKENS",
                        help="bring each prompt to this many tokens, as the server counts them, with real text; "
                             "0: as it is (default: 0 with --prompts, else 60 1024 4096 8192)")
    parser.add_argument("--concurrency", type=count_option("concurrency"), nargs="+", default=[1, 8, 32, 64],
                        metavar="C",
                        help="requests in flight per cell (default 1 8 32 64)")
    parser.add_argument("--max-tokens", type=count_option("max_tokens"), default=512, metavar="N",
                        help="at most N output tokens per request; a record that names its own output length "
                             "keeps it (default 512)")
    parser.add_argument("--coding", action="store_true",
                        help="use the coding problems as prompts and grade every answer (--prompts coding)")
    parser.add_argument("--requests-per-cell", type=count_option("requests"), default=None, metavar="N",
                        help="requests measured per cell (default: 2 x concurrency, at least 8)")
    parser.add_argument("--warmup", type=count_option("requests", 0), default=1, metavar="N",
                        help="unrecorded requests before each cell (default 1)")
    parser.add_argument("--release", choices=("wave", "staggered"), default="wave",
                        help="wave (default): each wave of C requests leaves at once and the next waits for it "
                             "to finish; staggered: each of the C slots sends its next request as soon as its "
                             "last one ends, as sglang.bench_serving --max-concurrency does (use it to compare "
                             "TTFT/ITL with bench_serving). run.json's plan records which")
    parser.add_argument("--out", metavar="FILE", help="also write the whole run (run + cells) as one JSON file")
    parser.add_argument("--resume", nargs="?", const="latest", metavar="RUN_DIR",
                        help="continue an interrupted run (default: the latest bench run)")
    parser.add_argument("--json", action="store_true", help="print the run as one JSON document on stdout")
    add_traffic_options(parser)
    add_server_options(parser)
    add_log_option(parser)


def run(args) -> int:
    from tui.commands._options import server_log, server_url
    from tui.commands._traffic import traffic_fields
    from workloads.bench import BenchSpec, run_bench

    url, api_key = server_url(args)
    spec = BenchSpec(url, api_key, tuple(args.contexts) if args.contexts is not None else None,
                     tuple(args.concurrency), args.max_tokens, args.coding, args.requests_per_cell, args.warmup,
                     args.release, traffic_fields(args), args.resume, server_log(args, url), args.out)
    bar = ProgressBar(sys.stderr)

    try:
        outcome = run_bench(spec, bar.update)
    except KeyboardInterrupt:
        from tui.commands._resume import say_interrupted

        bar.close()
        return say_interrupted("bench")
    bar.close()
    if args.json:
        import json

        sys.stdout.write(json.dumps(outcome.to_json()) + "\n")
    else:
        sys.stdout.write(format_table(list(outcome.cells), outcome.run) + "\n")
    if outcome.all_failed is not None:
        from backends.core import escaped

        sys.stderr.write(f"ddtune: error: every request failed; the first: {escaped(outcome.all_failed)}\n")
        return 1
    return 0


class ProgressBar:
    """The bench's progress on ``stream`` as workloads.bench.BenchLines writes it: a bar redrawn with \\r
    on a terminal, one line per cell otherwise, and a prompt source's skipped records."""

    def __init__(self, stream, width: int = 24) -> None:
        from workloads.bench import BenchLines

        self.stream = stream
        self.lines = BenchLines(stream.isatty(), width)

    def update(self, event) -> None:
        text = self.lines(event)
        if text:
            self.stream.write(text)
            self.stream.flush()

    def close(self) -> None:
        text = self.lines.close()
        if text:
            self.stream.write(text)
            self.stream.flush()



def _f(value, fmt: str = ".0f") -> str:
    return "-" if value is None else format(value, fmt)


def _ms3(d: dict) -> str:
    return "/".join(_f(d.get(q), ".1f") for q in ("p50", "p95", "p99"))


def _where(cell: dict) -> str:
    ctx = "as is" if cell["context"] == 0 else f"ctx {cell['context']}"
    rate = f" rate {cell['request_rate']:g}/s" if cell.get("request_rate") is not None else ""
    return f"{cell.get('prompts') or ''} {ctx} c{cell['concurrency']}{rate}".strip()


def accept_source(acceptance: dict) -> str:
    """Where a cell's acceptance came from; a cell written before sources were named had requests'."""
    if not acceptance:
        return "-"
    return str(acceptance.get("source") or "request")


def _share(value) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _flag(cell: dict) -> str:
    """``yes`` when the server served someone else's traffic during the cell, ``?`` when it cannot say."""
    contended = cell.get("contended")
    return "yes" if contended else "?" if contended is None and "contended" in cell else "-"


def format_table(cells: list[dict], run: dict) -> str:
    from backends.core import escaped

    coding = any(c.get("verdicts") for c in cells)
    rates = any(c.get("request_rate") is not None for c in cells)
    goodput = any(c.get("goodput") for c in cells)
    head = ["prompts", "ctx", "prompt", "conc"] + (["rate"] if rates else []) + \
        ["req", "err", "req/s", "tok/s", "stream p50", "TTFT p50/p95/p99 ms", "step gap p50/p95/p99 ms",
         "ITL/token p50/p95/p99 ms", "accept total/mean", "from", "max", "loops", "shared"] + \
        (["goodput"] if goodput else []) + (["pass"] if coding else [])
    rows = []
    empty: dict = {}
    for c in cells:
        t, i, a = c["ttft_ms"], c["itl_ms"], c.get("acceptance") or empty
        k = c.get("itl_token_ms") or empty  # absent in runs written before it existed
        row = [str(c.get("prompts") or "-"), "as is" if c["context"] == 0 else str(c["context"]),
               _f(c["prompt_tokens"]["mean"]), str(c["concurrency"])]
        if rates:
            row.append(_f(c.get("request_rate"), "g"))
        row += [str(c["requests"]), str(c["errors"]), _f(c.get("req_s"), ".2f"), _f(c["output_tok_s"], ".1f"),
                _f(c["per_stream_tok_s"]["p50"], ".1f"), f"{_f(t['p50'])}/{_f(t['p95'])}/{_f(t['p99'])}", _ms3(i),
                _ms3(k), f"{_f(a.get('total'), '.2f')}/{_f(a.get('mean'), '.2f')}", accept_source(a),
                _share((c.get("hit_max_tokens") or empty).get("share")),
                str((c.get("degenerate") or empty).get("count", "-")), _flag(c)]
        if goodput:
            g = c.get("goodput") or empty
            row.append(f"{_f(g.get('req_s'), '.2f')} ({_share(g.get('share'))})" if g else "-")
        if coding:
            v = c.get("verdicts") or {}
            row.append(f"{v.get('pass', 0)}/{sum(v.values())}")
        rows.append(row)
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    server = run.get("server") or {}
    collapsed = [c for c in cells if "acceptance_collapse" in (c.get("alarms") or [])]
    if collapsed:
        where = ", ".join(f"ctx {c['context']} c{c['concurrency']}" for c in collapsed)
        lines.append(f"ALARM acceptance_collapse in {where}: <= 1.10 tokens per verify step on a speculative "
                     f"server; the drafter is not helping (wrong draft model, a window that broke drafting?)")
    for c in cells:  # what went wrong, on one line per cell (server text: escaped, it cannot start a line)
        if c.get("errors"):
            first = escaped(c.get("first_error") or "?")
            lines.append(f"errors in {_where(c)}: {c['errors']} of {c['requests']}, the first: {first}")
        if c.get("dropped"):
            lines.append(f"dropped in {_where(c)}: the server sent numbers that are not counts, left out: "
                         + escaped(", ".join(c["dropped"])))
        if c.get("contended"):
            lines.append(f"CONTENDED {_where(c)}: {c.get('note') or 'the server served other traffic'}; its "
                         "figures are shared with that load")
    repeated = [c for c in cells if c.get("n_distinct")]
    if repeated:
        lines.append("repeated prompts: " + ", ".join(f"{_where(c)} sent {c['n_distinct']} distinct prompts "
                                                       f"{c['requests']} times" for c in repeated))
    lines.append("")
    release = (run.get("plan") or {}).get("release") or "staggered"
    plan = run.get("plan") or {}
    lines.append("step gap: time between content chunks (one per decode/verify step); ITL/token: each gap / the "
                 "tokens its chunk brought (sglang.bench_serving's ITL); accept total: all tokens / all verify "
                 f"steps of the cell; from: where it came from (request: the requests' own spec fields; "
                 f"counters: the server's /metrics over the cell; log: its Decode batch lines over the cell, "
                 f"weighted by #running-req; counters and log are the server's figures, not per-request "
                 f"means); max: requests that ran into --max-tokens; loops: degenerate answers (left out of "
                 f"accept unless --include-degenerate); shared: the server served other traffic meanwhile; "
                 f"requests released: {release}; "
                 + ("ignore_eos ON (--ignore-eos): tokens past the model's stop count" if plan.get("ignore_eos")
                    else "natural stops (no ignore_eos)"))
    lines.append(f"server {server.get('url')}  version {server.get('version') or '?'}  "
                 f"gpu {', '.join((run.get('host') or {}).get('gpus') or []) or 'none'}")
    if coding:
        total: dict[str, int] = {}
        for c in cells:
            for k, v in (c.get("verdicts") or {}).items():
                total[k] = total.get(k, 0) + v
        lines.append("coding: pass " + f"{total.get('pass', 0)}/{sum(total.values())}  " +
                     "  ".join(f"{k} {v}" for k, v in total.items() if k != "pass" and v))
    lines.append(f"run: {run.get('dir')}")
    return "\n".join(lines)
