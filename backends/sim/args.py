"""SGLang-style command line of the simulator, parsed and validated: the flags of one SGLang release
(backends/sim/flags.py: 0.5.23 down to 0.5.11) plus --sim-*.

``parse(argv)`` returns a frozen :class:`SimArgs`; SGLang's own validation errors are raised as
:class:`SGLangValueError` carrying SGLang's exact message (the caller prints it as SGLang would).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from backends.sim.draftdir import read_draft_dir
from backends.sim.flags import (ALGORITHMS, DEFAULT_BLOCK_SIZE, DEFAULT_DDTREE_TOPK, VERSIONS, build_parser,
                                peek_version, release)

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


def _env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    """SGLang's EnvBool: true/1/yes/y or false/0/no/n (any case); anything else keeps the default."""
    value = env.get(name, "").strip().lower()
    return True if value in ("true", "1", "yes", "y") else (False if value in ("false", "0", "no", "n") else default)


def parse(argv: list[str], environ: Mapping[str, str] | None = None) -> SimArgs:
    """Parse and validate like SGLang: argparse errors exit 2, ServerArgs errors raise SGLangValueError."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    version = peek_version(argv)
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
