"""The simulator's command line as SGLang's: one release's flag spelling (``build_parser(version)``, whose
``--help`` lists flags the way SGLang's ``ServerArgs.add_cli_args`` does, so flag detection by grepping
``--help`` works on the simulator), plus the --sim-* flags, and the releases it imitates.
"""

from __future__ import annotations

import argparse

VERSIONS = ("0.5.23", "0.5.19", "0.5.17", "0.5.15", "0.5.11")
# flags of open SGLang PRs (DDTree, all-SWA draft KV) the newest imitation also takes: no release has them
OPEN_PR_FLAGS = ("--speculative-ddtree-budget", "--speculative-dflash-enable-ddtree", "--speculative-draft-kv-ratio",
                 "--speculative-draft-swa-pool")
PHASES = ("load", "capture", "warmup")
HANG_PHASES = ("load", "capture", "warmup", "shutdown")
ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH")
DEFAULT_BLOCK_SIZE = 16
DEFAULT_DDTREE_TOPK = 6
# --sim-hostile with no text: a terminal escape for the window title (OSC 2) and the clipboard
# (OSC 52), a colour (CSI, also in its 8-bit C1 form), a bell, a bidi override, Textual actions and
# Rich markup: what a hostile server could send
HOSTILE = ("\x1b]2;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[31mRED\x1b[0m\x9b1m\x07\u202e [@click=app.quit]quit[/] "
           "[@click=app.screenshot('/tmp/ddtune-hostile')]shot[/] [bold red]markup[/bold red]")


def release(version: str) -> tuple[int, ...]:
    """``"0.5.17"`` as ``(0, 5, 17)``, for "from this release on" checks."""
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _port(text: str) -> int:
    """A TCP port. SGLang takes any int and dies binding it; the simulator says so at parse time."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is out of range: use a port from 1 to 65535")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def build_parser(version: str = "0.5.23") -> argparse.ArgumentParser:
    """The parser for one SGLang release's flag spelling (``prog`` as ``python -m sglang.launch_server``)."""
    p = argparse.ArgumentParser(prog="launch_server.py")
    a = p.add_argument
    a("--model-path", "--model", type=str, required=True,
      help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.")
    a("--tokenizer-path", type=str, default=None, help="The path of the tokenizer.")
    a("--served-model-name", type=str, default=None,
      help="Override the model name returned by the v1/models endpoint in OpenAI API server.")
    a("--host", type=str, default="127.0.0.1", help="The host of the HTTP server.")
    a("--port", type=_port, default=30000, help="The port of the HTTP server.")
    a("--api-key", type=str, default=None,
      help="Set API key of the server. It is also used in the OpenAI API compatible server.")
    a("--trust-remote-code", action="store_true",
      help="Whether or not to allow for custom models defined on the Hub in their own modeling files.")
    a("--dtype", type=str, default="auto", help="Data type for model weights and activations.")
    a("--context-length", type=int, default=None,
      help="The model's maximum context length. Defaults to None (will use the value from the model's "
           "config.json instead).")
    a("--mem-fraction-static", type=float, default=None,
      help="The fraction of the memory used for static allocation (model weights and KV cache memory pool).")
    a("--max-running-requests", type=int, default=None, help="The maximum number of running requests.")
    a("--chunked-prefill-size", type=int, default=None,
      help="The maximum number of tokens in a chunk for the chunked prefill.")
    rel = release(version)
    a("--tp-size", "--tensor-parallel-size", type=int, default=1, help="The tensor parallelism size.")
    a("--attention-backend", type=str, default=None, help="Choose the kernels for attention layers.")
    if rel < (0, 5, 20):  # recorded in 0.5.17's --help, gone from 0.5.23's
        a("--cuda-graph-max-bs", type=int, default=None, help="Set the maximum batch size for cuda graph.")
    # accepted and not modelled: the flags the real-server tier sets (both recordings' --help list them)
    accepted = [("--max-total-tokens", int), ("--sampling-backend", str), ("--grammar-backend", str),
                ("--nccl-port", int)]
    if rel >= (0, 5, 15):
        accepted += [("--cuda-graph-max-bs-decode", int), ("--cuda-graph-max-bs-prefill", int),
                     ("--mm-feature-transport", str)]
        a("--disable-prefill-cuda-graph", action="store_true", help="Disable the prefill cuda graph.")
    for flag, kind in accepted:
        a(flag, type=kind, default=None, help=f"SGLang's {flag} (accepted; the simulator models nothing of it).")
    a("--disable-cuda-graph", action="store_true",
      help="Deprecated. Use --cuda-graph-backend-{decode,prefill}=disabled instead."
      if (0, 5, 15) <= release(version) < (0, 5, 20) else "Disable cuda graph.")
    a("--log-level", type=str, default="info", help="The logging level of all loggers.")
    a("--decode-log-interval", type=int, default=40, help="The log interval of decode batch.")
    a("--enable-metrics", action="store_true", help="Enable log prometheus metrics.")
    a("--reasoning-parser", type=str, default=None,
      help="Specify the parser for reasoning models. Supported parsers: deepseek-r1, deepseek-v3, glm45, "
           "kimi_k2, qwen3, qwen3-thinking, step3.")
    a("--random-seed", type=int, default=None, help="The random seed.")
    a("--disable-overlap-schedule", action="store_true",
      help="Disable the overlap scheduler, which overlaps the CPU scheduler with GPU model worker.")
    if version == "0.5.11":
        a("--speculative-algorithm", type=str, choices=list(ALGORITHMS), default=None,
          help="Speculative algorithm.")
    else:
        a("--speculative-algorithm", type=str, default=None,
          help="Speculative algorithm (case-insensitive): EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, DFLASH, DDTREE.")
    a("--speculative-draft-model-path", "--speculative-draft-model", type=str, default=None,
      help="The path of the draft model weights. This can be a local folder or a Hugging Face repo ID.")
    a("--speculative-num-steps", type=int, default=None,
      help="The number of steps sampled from draft model in Speculative Decoding.")
    a("--speculative-eagle-topk", type=int, default=None,
      help="The number of tokens sampled from the draft model in eagle2 each step.")
    a("--speculative-num-draft-tokens", type=int, default=None,
      help="The number of tokens sampled from the draft model in Speculative Decoding. "
           "For DFLASH: the verify block size.")
    a("--speculative-dflash-block-size", type=int, default=None,
      help="Alias of --speculative-num-draft-tokens for DFLASH.")
    if rel < (0, 5, 12):
        a("--speculative-dflash-draft-window-size", dest="speculative_draft_window_size", type=int, default=None,
          help="DFLASH draft KV sliding-window size. Must be >= block_size when set.")
    else:
        a("--speculative-draft-window-size", type=int, default=None,
          help="Draft KV sliding-window size for DFLASH. Must be >= block_size when set.")
    if (0, 5, 12) <= rel < (0, 5, 20):  # DeprecatedAliasStoreAction, help=SUPPRESS (0.5.15, 0.5.19 wheels)
        a("--speculative-dflash-draft-window-size", dest="speculative_draft_window_size", type=int,
          default=None, help=argparse.SUPPRESS)
    if rel >= (0, 5, 20):  # OPEN_PR_FLAGS, imitated on the newest release only (no release has them)
        a("--speculative-ddtree-budget", type=int, default=None,
          help="DDTREE: number of draft tree nodes verified per step (default: block size - 1). "
               "Max top-k per node is the environment variable SGLANG_DDTREE_MAX_TOPK (default 6).")
        a("--speculative-dflash-enable-ddtree", action="store_true",
          help="DFLASH: verify a DDTree draft tree instead of a single chain (tree budget = "
               "--speculative-num-draft-tokens - 1; top-k from SGLANG_DDTREE_MAX_TOPK).")
        # draft KV sizing for all-SWA drafts, as the open PR #40665 and the closed PR #40563 spell them
        a("--speculative-draft-kv-ratio", type=float, default=1.0,
          help="DFLASH with an all-SWA draft: size the draft KV pool as this fraction of the target's "
               "token capacity (default 1.0).")
        a("--speculative-draft-swa-pool", action="store_true",
          help="DFLASH with an all-SWA draft: keep the draft's KV in its own SWA pool.")
    a("--speculative-draft-attention-backend", type=str, default=None, help="Attention backend for the draft model.")
    if rel >= (0, 5, 20):  # not in the 0.5.17 --help recording
        a("--speculative-draft-kv-cache-dtype", type=str, default=None, help="KV cache dtype of the draft model.")
        a("--speculative-use-block-verification", action="store_true", help="DFLASH: use block verification.")

    g = p.add_argument_group("simulator (ddtune sim only; not SGLang flags)")
    g.add_argument("--sim-version", choices=VERSIONS, default="0.5.23",
                   help="SGLang release to imitate: flag spelling, log formats, and (below 0.5.19) no "
                        "per-request spec fields on chat (default: 0.5.23).")
    g.add_argument("--sim-load-seconds", type=_positive_float, default=4.0,
                   help="Total time of the paced startup log before the port opens (default: 4).")
    g.add_argument("--sim-step-ms", type=_positive_float, default=None,
                   help="Fixed decode step time in ms instead of the performance model; 0 removes pacing.")
    g.add_argument("--sim-seed", type=int, default=1234, help="Seed of acceptance and answers (default: 1234).")
    g.add_argument("--sim-acceptance", type=float, default=None, metavar="X",
                   help="Force the mean acceptance length (tokens per verify step, >= 1) of a speculative "
                        "server, e.g. 1.0 for a drafter that silently stopped helping (default: the model's).")
    g.add_argument("--sim-wrong-rate", type=float, default=0.1,
                   help="Fraction of coding answers whose final solution is wrong (default: 0.1).")
    g.add_argument("--sim-diverge-rate", type=_fraction, default=0.0,
                   help="With speculation on, the share of prompts whose output differs from the greedy "
                        "(speculation-off) output from some position on, as a broken verifier would make it "
                        "(default: 0, lossless).")
    g.add_argument("--sim-no-spec-fields", action="store_true",
                   help="Leave the spec_* fields out of every answer and spec_verify_calls_total out of /metrics, "
                        "as a build that reports neither would: acceptance is then only in the log.")
    g.add_argument("--sim-no-tokenize", action="store_true",
                   help="Answer /tokenize and /v1/tokenize with 404, as a server without them would.")
    g.add_argument("--sim-request-log", metavar="FILE", default=None,
                   help="Append one JSON line per generation request to FILE: its route, messages or prompt, "
                        "max_tokens, ignore_eos, temperature and when it arrived (time.time()), as received.")
    g.add_argument("--sim-fail-at", choices=PHASES, default=None,
                   help="Die during this startup phase with SGLang's fatal text.")
    g.add_argument("--sim-hang-at", choices=HANG_PHASES, default=None,
                   help="Stop making progress in this phase until SIGUSR1 (shutdown: ignore SIGTERM).")
    g.add_argument("--sim-drain-seconds", type=_positive_float, default=0.0,
                   help="After SIGTERM keep answering for this many seconds, then exit 0.")
    g.add_argument("--sim-children", type=int, default=0,
                   help="Start N scheduler-like child processes in the server's process group.")
    g.add_argument("--sim-orphan-seconds", type=_positive_float, default=30.0,
                   help="How long children outlive a parent that died without stopping them (default: 30).")
    g.add_argument("--sim-daemons", type=int, default=0,
                   help="Start N daemons that leave the server's session (setsid and a double fork), as a "
                        "library's helper can; each lives --sim-orphan-seconds unless stopped.")
    g.add_argument("--sim-gpu-alloc-gib", type=_positive_float, default=0.0, metavar="GIB",
                   help="Hold this much real GPU memory (CUDA driver, first GPU of CUDA_VISIBLE_DEVICES) "
                        "while serving, as a loaded server does (default: 0, no GPU needed).")
    g.add_argument("--sim-hostile", nargs="?", const=HOSTILE, default=None, metavar="TEXT",
                   help="Act as a hostile server: put TEXT (default: terminal escapes for the window title "
                        "and the clipboard, Textual actions and markup) in the served model name, "
                        "/server_info's version, a log line, fatal lines, error bodies and every answer.")
    return p


def peek_version(argv: list[str] | tuple[str, ...]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--sim-version" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--sim-version="):
            return arg.split("=", 1)[1]
    return "0.5.23"


def imitated_version(argv: list[str] | tuple[str, ...]) -> str:
    """The SGLang release a simulator started with ``argv`` imitates (the last --sim-version)."""
    given = [a.split("=", 1)[1] for a in argv if a.startswith("--sim-version=")] + \
            [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--sim-version"]
    return given[-1] if given else VERSIONS[0]
