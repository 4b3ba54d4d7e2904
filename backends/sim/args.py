"""SGLang-style command line of the simulator: the flags of SGLang 0.5.23 (or 0.5.11) plus --sim-*.

``build_parser(version)`` gives an argparse parser whose ``--help`` lists flags the way SGLang's
``ServerArgs.add_cli_args`` does, so flag detection by grepping ``--help`` works on the simulator.
``parse(argv)`` returns a frozen :class:`SimArgs`; SGLang's own validation errors are raised as
:class:`SGLangValueError` carrying SGLang's exact message (the caller prints it as SGLang would).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from backends.sim.draftdir import read_draft_dir

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


class SGLangValueError(ValueError):
    """A ServerArgs validation error, message exactly as SGLang words it."""


@dataclass(frozen=True)
class SimArgs:
    """Everything the simulator needs from its command line, validated."""

    version: str
    model_path: str
    served_model_name: str
    host: str
    port: int
    api_key: str | None
    reasoning_parser: str | None
    decode_log_interval: int
    enable_metrics: bool
    max_running_requests: int
    context_length: int
    algorithm: str | None            # None, "DFLASH" or "DDTREE" (fork flag maps to DDTREE)
    # "pr29907" (--speculative-algorithm DDTREE) or "fork" (--speculative-dflash-enable-ddtree)
    ddtree_flavour: str | None
    draft_model_path: str | None
    block_size: int
    window: int | None
    budget: int | None               # DDTree tree budget (drafted nodes verified per step)
    topk: int                        # DDTree max topk (env SGLANG_DDTREE_MAX_TOPK)
    load_seconds: float
    step_ms: float | None            # None: the performance model decides; 0: no pacing
    seed: int
    wrong_rate: float
    fail_at: str | None
    hang_at: str | None
    drain_seconds: float
    children: int
    orphan_seconds: float
    daemons: int = 0                 # processes that leave the server's session (setsid, double fork)
    server_args: dict = field(default_factory=dict)  # every parsed dest, for the server_args= dump
    acceptance: float | None = None  # --sim-acceptance: the mean tokens per verify step, forced
    diverge_rate: float = 0.0        # with speculation: share of prompts whose output leaves the greedy one
    gpu_alloc_gib: float = 0.0       # GPU memory to hold on the first visible GPU (backends.sim.gpualloc)
    hostile: str | None = None       # --sim-hostile: text a hostile server puts in what it sends
    deprecations: tuple[str, ...] = ()  # the yellow warnings SGLang's deprecated aliases print at parse time
    draft_agreement: str | None = None  # "agree"/"random": a selftest draft's config says so (backends.sim.draftdir)
    no_spec_fields: bool = False     # --sim-no-spec-fields: no spec_* in answers, no verify counter in /metrics
    no_tokenize: bool = False        # --sim-no-tokenize: no /tokenize route (a server without one)
    request_log: str | None = None   # --sim-request-log: append what each generation request asked, as JSONL
    log_forward_iters: bool = False  # env SGLANG_LOG_FORWARD_ITERS (0.5.15+): "Decode batch [N], ..."

    @property
    def speculative(self) -> bool:
        return self.algorithm is not None

    @property
    def chat_spec_details(self) -> bool:
        """Whether chat answers ``return_spec_tokens_details`` with ``sglext`` (sglang 0.5.19+);
        0.5.11-0.5.18 ignore the field and put no spec field on chat (recorded on a real 0.5.17)."""
        return release(self.version) >= (0, 5, 19)

    @property
    def window_flag(self) -> str:
        if release(self.version) < (0, 5, 12):
            return "--speculative-dflash-draft-window-size"
        return "--speculative-draft-window-size"


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


def _peek_version(argv: list[str] | tuple[str, ...]) -> str:
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


def _env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    """SGLang's EnvBool: true/1/yes/y or false/0/no/n (any case); anything else keeps the default."""
    value = env.get(name, "").strip().lower()
    return True if value in ("true", "1", "yes", "y") else (False if value in ("false", "0", "no", "n") else default)


def parse(argv: list[str], environ: Mapping[str, str] | None = None) -> SimArgs:
    """Parse and validate like SGLang: argparse errors exit 2, ServerArgs errors raise SGLangValueError."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    version = _peek_version(argv)
    if version not in VERSIONS:
        version = "0.5.23"  # argparse reports the bad choice below
    ns = build_parser(version).parse_args(argv)
    rel = release(version)
    window_flag = "--speculative-dflash-draft-window-size" if rel < (0, 5, 12) else "--speculative-draft-window-size"
    deprecations = tuple(_deprecations(argv, rel))

    algo = ns.speculative_algorithm.upper() if ns.speculative_algorithm else None
    if algo is not None and algo not in ALGORITHMS and not (rel >= (0, 5, 20) and algo == "DDTREE"):
        raise SGLangValueError(f"Unknown speculative algorithm name: {ns.speculative_algorithm}")
    flavour = None
    if algo == "DDTREE":
        flavour = "pr29907"
    elif algo == "DFLASH" and getattr(ns, "speculative_dflash_enable_ddtree", False):
        algo, flavour = "DDTREE", "fork"
    if algo is not None and algo not in ("DFLASH", "DDTREE"):
        raise SGLangValueError(f"Speculative algorithm {algo} needs a draft or target model the simulator "
                               "cannot imitate; use DFLASH or DDTREE.")
    if algo is not None and not ns.speculative_draft_model_path:
        name = "DFLASH" if flavour != "pr29907" else "DDTREE"
        raise SGLangValueError(f"{name} speculative decoding requires setting --speculative-draft-model-path.")
    nd, bs = ns.speculative_num_draft_tokens, ns.speculative_dflash_block_size
    if nd is not None and bs is not None and nd != bs:
        raise SGLangValueError(
            "Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but they differ. "
            f"For DFLASH they must match. speculative_num_draft_tokens={nd}, speculative_dflash_block_size={bs}.")
    draft = read_draft_dir(ns.speculative_draft_model_path if algo else None)
    block = nd if nd is not None else (bs if bs is not None else (draft.block_size or DEFAULT_BLOCK_SIZE))
    window = ns.speculative_draft_window_size if algo else None
    if window is not None:
        if window <= 0:
            raise SGLangValueError(f"{window_flag} must be positive, got {window}.")
        if window < block:
            raise SGLangValueError(
                f"{window_flag} must be >= --speculative-num-draft-tokens (block_size). "
                f"window_size={window}, block_size={block}.")
    budget = None
    topk = 1
    if algo == "DDTREE":
        given = getattr(ns, "speculative_ddtree_budget", None)
        budget = given if (given is not None and flavour == "pr29907") else block - 1
        if budget <= 0:
            raise SGLangValueError(f"--speculative-ddtree-budget must be positive, got {budget}.")
        raw_topk = env.get("SGLANG_DDTREE_MAX_TOPK", str(DEFAULT_DDTREE_TOPK))
        try:
            topk = int(raw_topk)
        except ValueError:
            raise SGLangValueError(f"SGLANG_DDTREE_MAX_TOPK must be an integer, got {raw_topk!r}.") from None
        if topk <= 0:
            raise SGLangValueError(f"SGLANG_DDTREE_MAX_TOPK must be positive, got {topk}.")
    max_running = ns.max_running_requests or (48 if algo else 1024)
    ratio = getattr(ns, "speculative_draft_kv_ratio", 1.0)
    if not 0.0 < ratio <= 1.0:  # the simulator's own wording: the PR's is not known
        raise SGLangValueError(f"--speculative-draft-kv-ratio must be in (0, 1], got {ratio}.")
    # spec v2 (the overlap scheduler) for DFlash: none in 0.5.11; on by default in the 0.5.23 imitated
    overlap_off = ns.disable_overlap_schedule
    if algo is not None:
        overlap_off = overlap_off or rel < (0, 5, 12) or not _env_bool(env, "SGLANG_ENABLE_SPEC_V2", True)
    if ns.sim_children < 0 or ns.sim_daemons < 0:
        raise SGLangValueError(f"--sim-children and --sim-daemons must be >= 0, got {ns.sim_children} and "
                               f"{ns.sim_daemons}.")
    if ns.sim_acceptance is not None and not 1.0 <= ns.sim_acceptance <= block:
        raise SGLangValueError(f"--sim-acceptance must be between 1.0 and the block size {block}, "
                               f"got {ns.sim_acceptance}.")
    if ns.decode_log_interval <= 0:
        raise SGLangValueError(f"--decode-log-interval must be positive, got {ns.decode_log_interval}.")
    dump = {k: v for k, v in vars(ns).items() if not k.startswith("sim_")}
    served = ns.served_model_name or (ns.model_path + ns.sim_hostile if ns.sim_hostile else ns.model_path)
    dump.update(served_model_name=served,
                tokenizer_path=ns.tokenizer_path or ns.model_path)
    if algo is not None:
        dump.update(speculative_algorithm=algo if flavour != "fork" else "DFLASH", speculative_num_steps=1,
                    speculative_eagle_topk=1, speculative_num_draft_tokens=block, max_running_requests=max_running)
    dump["disable_overlap_schedule"] = overlap_off
    if (0, 5, 17) <= rel < (0, 5, 20):  # the 0.5.17 recording's ServerArgs: per-phase CUDA graph sizes
        legacy = dump.pop("cuda_graph_max_bs")
        dump["cuda_graph_max_bs_decode"] = dump.get("cuda_graph_max_bs_decode") or legacy
    return SimArgs(
        version=version, model_path=ns.model_path, served_model_name=served,
        host=ns.host, port=ns.port, api_key=ns.api_key, reasoning_parser=ns.reasoning_parser,
        decode_log_interval=ns.decode_log_interval, enable_metrics=ns.enable_metrics,
        max_running_requests=max_running, context_length=ns.context_length or 40960,
        algorithm=algo, ddtree_flavour=flavour, draft_model_path=ns.speculative_draft_model_path,
        block_size=block, window=window, budget=budget, topk=topk,
        load_seconds=ns.sim_load_seconds, step_ms=ns.sim_step_ms, seed=ns.sim_seed,
        wrong_rate=ns.sim_wrong_rate, fail_at=ns.sim_fail_at, hang_at=ns.sim_hang_at,
        drain_seconds=ns.sim_drain_seconds, children=ns.sim_children, orphan_seconds=ns.sim_orphan_seconds,
        daemons=ns.sim_daemons,
        server_args=dump, acceptance=ns.sim_acceptance, diverge_rate=ns.sim_diverge_rate,
        gpu_alloc_gib=ns.sim_gpu_alloc_gib, hostile=ns.sim_hostile, deprecations=deprecations,
        draft_agreement=draft.agreement, no_spec_fields=ns.sim_no_spec_fields,
        no_tokenize=ns.sim_no_tokenize, request_log=ns.sim_request_log,
        # metrics_reporter.py of the 0.5.15/0.5.19/0.5.23 wheels: the batch lines carry the forward count
        log_forward_iters=rel >= (0, 5, 15) and _env_bool(env, "SGLANG_LOG_FORWARD_ITERS", False),
    )


def _deprecations(argv: list[str], rel: tuple[int, ...]):
    """print_deprecated_warning's text (sglang/srt/arg_groups/argparse_actions.py, 0.5.19 wheel)."""
    given = {a.split("=", 1)[0] for a in argv}
    aliases = []
    if (0, 5, 12) <= rel < (0, 5, 20):
        aliases.append(("--speculative-dflash-draft-window-size", "--speculative-draft-window-size"))
    if (0, 5, 15) <= rel < (0, 5, 20):
        aliases.append(("--disable-cuda-graph", "--cuda-graph-backend-{decode,prefill}=disabled"))
    for old, new in aliases:
        if old in given:
            yield f"'{old}' is deprecated and will be removed in a future release. Use '{new}' instead."


def wrong_rate(argv: list[str] | tuple[str, ...]) -> float:
    """The share of coding answers the simulator gets wrong on purpose, as ``argv`` (a config's extra
    args) sets it with ``--sim-wrong-rate`` (default 0.1): the console says so beside the verdicts."""
    value = build_parser().get_default("sim_wrong_rate")
    for i, arg in enumerate(argv):
        text = arg.partition("=")[2] if arg.startswith("--sim-wrong-rate=") else \
            argv[i + 1] if arg == "--sim-wrong-rate" and i + 1 < len(argv) else None
        if text is not None:
            try:
                value = float(text)
            except ValueError:
                pass  # the simulator itself refuses it, loudly
    return float(value)
