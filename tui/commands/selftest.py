"""ddtune selftest: the configured SGLang, flags and knobs on tiny models, before the real model loads."""

from __future__ import annotations

HELP = ("check this SGLang, its flags and ddtune's lifecycle on tiny models (about 2.5 minutes on a GPU box: "
        "two tiny server starts; seconds on the simulator)")
EXAMPLES = """\
examples:
  ddtune selftest                             the configured server (the simulator when none is configured)
  ddtune --config box.toml selftest           your interpreter, flags, env and knobs; tiny models
  ddtune selftest --json | jq '.checks[] | select(.status == "fail")'
  ddtune selftest --keep                      keep the tiny models and the server logs (printed at the end)

With the configured interpreter ([server] python), builds a tiny Qwen3 target and two DFlash drafts
(one that agrees with the target, one that does not) with ddtune's own builder (torch and
safetensors, offline), then starts your SGLang with your flags and knobs on them through ddtune's
lifecycle, under a temporary state dir (your server record is untouched) on a free port, and checks:
  build           the builder ran under the server's interpreter
  flags           every extra_args flag is in this SGLang's --help; every knob has a route
  ready           ddtune's readiness: the pid we started listens and generates a token
  draft_runner    the draft runner line reports the requested window and compact cache
  acceptance      acceptance is readable, per request (meta_info) or from /metrics counters
  agree           the agreeing draft's acceptance is near the block size
  gpu             NVML attributes GPU memory to the server's pids (skipped without NVML)
  knob_restart    a restart to another window (and the random draft) is verified
  collapse_alarm  the random draft (acceptance ~1) trips the acceptance_collapse alarm
  stop            the stop leaves no process, no bound port, no GPU memory
Flags a tiny model cannot take (--tp/--dp/--pp sizes, quantization, parsers, chat templates,
--context-length, multi-node) are set aside and named. Each line is PASS, FAIL (with the fix) or
SKIP (with why). Exit 0 when nothing failed, 1 otherwise, 2 on bad usage.
Takes: on a real SGLang 0.5.17 on an H200, 157 s, most of it two starts of a tiny server of ~60 s
each (imports, CUDA graphs); the builder and this SGLang's --help run side by side, and a --help
ddtune cached for this SGLang before is not asked again. Seconds on the simulator.
On a llama.cpp config ([server] backend = "llamacpp", nothing else needed): ddtune's own tiny-GGUF
builder (gguf + numpy, the llamacpp extra) makes the models; draft_runner checks n_max from the
draft-dflash startup line, agree judges the agreeing draft against n_max + 1, the restart moves n_max.
Supported: SGLang 0.5.11 to 0.5.23 with DFLASH (written against 0.5.17's source and recordings, and
run on a real 0.5.17 server on an H200, where every check passes; docs/real-sglang.md), and the
built-in simulator; with NVML for the GPU check.
"""


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout (checks, set-aside flags)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary folder (tiny models, server logs) even when every check passed "
                             "(a failed selftest always keeps it)")
    parser.add_argument("--timeout", type=float, default=900.0, metavar="S",
                        help="the most each tiny server may take to become ready (default 900 s; [server] "
                             "ready_timeout_s when smaller)")


def run(args) -> int:
    import asyncio

    from backends.selftest import run_selftest
    from tui.commands._server import err, load_config, note, print_json, print_progress

    if args.timeout <= 0:
        from backends.core import UsageError

        raise UsageError(f"--timeout {args.timeout}: must be > 0", hint="e.g. --timeout 600")
    config = load_config(args)
    err(f"selftest of {config.backend} ({config.source}): tiny models, a temporary state dir, a free port")
    report = asyncio.run(run_selftest(config, print_progress, note, keep=args.keep, ready_timeout_s=args.timeout))
    if args.json:
        print_json(report.to_json())
    else:
        print_report(report)
    return 0 if report.ok else 1


def print_report(report) -> None:
    import sys

    out = sys.stdout
    version = f" ({report.engine} {report.version})" if report.version else ""
    out.write(f"ddtune selftest: {report.backend}{version}\n")
    for aside in report.set_aside:
        out.write(f"  set aside: {' '.join(aside['args'])}: {aside['why']}\n")
    width = max(len(c.name) for c in report.checks) if report.checks else 0
    for check in report.checks:
        out.write(f"{check.status.upper():<4}  {check.name:<{width}}  {check.detail}\n")
        if check.fix and check.status == "fail":
            out.write(f"{'':<4}  {'':<{width}}  fix: {check.fix}\n")
    failed = [c.name for c in report.checks if c.status == "fail"]
    if report.work_dir:
        out.write(f"kept: {report.work_dir} (tiny models, state/logs/ has the server logs)\n")
    out.write("selftest passed\n" if not failed else f"selftest FAILED: {', '.join(failed)}\n")
