"""The paced startup log of SGLang (0.5.23 or 0.5.11 formats), with fault and hang injection.

``Startup.load()`` covers everything before the HTTP port opens (server args, weights, draft runner,
KV cache, CUDA graphs, engine summary); ``Startup.after_bind()`` prints uvicorn's lines. Pacing
splits ``--sim-load-seconds`` over the phases. Fatal faults print SGLang's text and raise
:class:`StartupFailed`; a hang waits until ``released`` is set (SIGUSR1, see runner.py), else
forever (stop signals still work).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from backends.sim.args import SimArgs
from backends.sim.flags import release
from backends.sim.engine import KV_TOKENS
from backends.sim.logwriter import LogWriter, stamp

# the line of sglang/launch_server.py that warns about the entrypoint, by release (read from the wheels)
LAUNCH_WARNING_LINE = {"0.5.11": 56, "0.5.15": 57, "0.5.17": 56, "0.5.19": 65, "0.5.23": 71}  # 0.5.23: recorded
CAPTURE_BS = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48]

# Memory, in GB as SGLang prints it, on an H200 running Qwen3-8B with a DFlash drafter. Every line
# carries the running balance, so the lines add up: after the KV cache, avail = before - K - V.
GPU_AVAIL_GB = 138.20                # free when the first weight load begins
TARGET_GB, DRAFT_GB = 15.40, 1.02    # weights
TARGET_KV_GB, DRAFT_KV_GB = 48.63, 2.70  # each of K and V, per pool
GRAPH_GB = 0.81                      # each CUDA graph capture

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "139.81 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 138.68 GiB memory in "
       "use. Of the allocated memory 135.13 GiB is allocated by PyTorch, and 1.93 GiB is reserved by PyTorch but "
       "unallocated.")

POSSIBLE_SOLUTIONS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


class StartupFailed(Exception):
    """The simulated server died during startup; the text is already printed."""


class Startup:
    def __init__(self, args: SimArgs, log: LogWriter, released: asyncio.Event | None = None) -> None:
        self.args = args
        self.log = log
        self.released = released or asyncio.Event()  # ends a --sim-hang-at hang
        self.timings: dict[str, float] = {}
        self.graph_s: dict[str, float] = {}  # CUDA graph capture seconds, by graph name
        self.avail = GPU_AVAIL_GB  # free GPU memory now, as the next line reports it

    def use(self, gb: float) -> float:
        """Take ``gb`` from the free memory; the new balance, rounded as printed."""
        self.avail = round(self.avail - gb, 2)
        return self.avail

    async def pause(self, fraction: float) -> None:
        if self.args.load_seconds > 0:
            await asyncio.sleep(self.args.load_seconds * fraction)

    async def hang_if(self, phase: str) -> None:
        if self.args.hang_at == phase:
            await self.released.wait()

    def server_args_line(self) -> str:
        a = self.args.server_args
        if release(self.args.version) < (0, 5, 20):  # a dict from 0.5.20 on (0.5.17 recorded: ServerArgs)
            inner = ", ".join(f"{k}={v!r}" for k, v in a.items())
            return f"server_args=ServerArgs({inner})"
        return f"server_args={a!r}"

    async def _bar(self, desc: str, total: int, seconds: float, style: str, desc_fn=None) -> None:
        start = time.monotonic()
        for i in range(total + 1):
            d = desc_fn(i) if desc_fn else desc
            self.log.raw("\r" + LogWriter.bar(d, i, total, time.monotonic() - start, style))
            if i < total:
                await asyncio.sleep(seconds / total if seconds > 0 else 0)
        self.log.raw("\n")

    async def _weights(self, kind: str, shards: int, seconds: float, usage: float) -> None:
        t0 = time.monotonic()
        self.log.info(f"Load weight begin. avail mem={self.avail:.2f} GB")
        if kind != "DFlashDraftModel":
            await self.hang_if("load")
        old = self.args.version == "0.5.11"
        desc = "Loading safetensors checkpoint shards" if old else "Multi-thread loading shards"
        await self._bar(desc, shards, seconds, "shards")
        elapsed = time.monotonic() - t0
        self.log.info(f"Load weight end. elapsed={elapsed:.2f} s, type={kind}, avail mem={self.use(usage):.2f} GB, "
                      f"mem usage={usage:.2f} GB.")

    def fatal(self, text: str) -> None:
        self.log.info("Scheduler hit an exception: Traceback (most recent call last):\n"
                      '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", '
                      "line 3021, in run_scheduler_process\n"
                      "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, "
                      "dp_rank)\n"
                      f"{text}{self.args.hostile or ''}\n")
        self.log.info("Received sigquit from a child process. It usually means the child failed.")
        raise StartupFailed(text)

    def preamble(self) -> None:
        """What a real server prints before ``server_args=`` (0.5.17 logs): the entrypoint UserWarning
        (sglang/launch_server.py, every release here), the deprecated aliases' yellow warnings, the
        max-running-requests reset of a speculative server."""
        a = self.args
        line = LAUNCH_WARNING_LINE.get(a.version, 56)
        self.log.raw(f"/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py:{line}: UserWarning: "
                     "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended "
                     "entrypoint.\n  Example: sglang serve --model-path <model> [options]\n  warnings.warn(\n")
        for text in a.deprecations:
            self.log.info(f"\x1b[1;33m{text}\x1b[0m")
        if a.speculative and "--max-running-requests" not in getattr(sys, "argv", []):
            self.log.info(f"Max running requests is reset to {a.max_running_requests} for speculative decoding. "
                          "You can override this by explicitly setting --max-running-requests.")

    @property
    def new(self) -> bool:
        """0.5.20 on: the startup lines recorded on a real 0.5.23 (tests/data/real/0.5.23/logs)."""
        return release(self.args.version) >= (0, 5, 20)

    def init_dist(self, first: bool = True) -> None:
        if not self.new:
            self.log.info("Init torch distributed begin.")
            self.log.info("Init torch distributed ends. elapsed=0.07 s, mem usage=0.09 GB")
            return
        if first:  # once per server; each model's weights then start from a memory baseline
            self.log.info("Init parallel begin.")
            self.log.info("Init parallel ends. elapsed=0.21 s")
        self.log.info("Memory baseline taken. mem usage=0.00 GB")

    async def load(self) -> None:
        a, L = self.args, self.args.load_seconds
        self.preamble()
        self.log.info(self.server_args_line())
        self.log.info("Using default HuggingFace chat template with detected content format: string")
        # ~25 s of Python imports on a real 0.5.17 before torch distributed and the first weight
        await self.pause(0.10)
        t0 = time.monotonic()
        self.init_dist()
        await self._weights("Qwen3ForCausalLM", 4, L * 0.35, TARGET_GB)
        if a.fail_at == "load":
            self.fatal("Exception: Failed to load weights: " + OOM)
        if a.speculative:
            self.init_dist(first=False)
            await self._weights("DFlashDraftModel", 1, L * 0.08, DRAFT_GB)
            self.log.info(f"Initialized DFLASH draft runner. attention_backend=flashinfer, model=DFlashDraftModel, "
                          f"block_size={a.block_size}, draft_window_size={a.window}, "
                          f"compact_cache={a.window is not None}")
            if self.new:
                self.log.info("DFLASH draft runner ready. mask_token=<|MASK|>, mask_token_id=151669, "
                              "mask_token_id_override=151669, noise_embed_scale=1.0")
                self.log.info("DFLASH fused KV materialization enabled. n_layers=1, num_kv_heads=8, head_dim=128")
            else:
                self.log.info("DFLASH draft runner ready. mask_token=<|MASK|>, mask_token_id=151669, "
                              f"block_size={a.block_size}")
            if a.algorithm == "DDTREE" and a.budget is not None:
                self.log.info(f"Initialized DDTree worker. block_size={a.block_size}, tree_budget={a.budget}, "
                              f"max_tree_nodes={a.budget + 1}")
        self.timings["load_weight"] = time.monotonic() - t0
        t1 = time.monotonic()
        await self.pause(0.05)
        tokens = KV_TOKENS
        dtype = "dtype: torch.bfloat16, " if a.version != "0.5.11" else ""
        for size in (TARGET_KV_GB, DRAFT_KV_GB) if a.speculative else (TARGET_KV_GB,):
            self.log.info(f"KV Cache is allocated. {dtype}#tokens: {tokens}, K size: {size:.2f} GB, "
                          f"V size: {size:.2f} GB")
            self.use(2 * size)
            if release(a.version) >= (0, 5, 15):  # recorded on 0.5.17 and 0.5.23: one per pool
                self.log.info(f"Memory pool end. avail mem={self.avail:.2f} GB")
        if release(a.version) < (0, 5, 15):
            self.log.info(f"Memory pool end. avail mem={self.avail:.2f} GB")
        self.timings["kv_cache_allocation"] = time.monotonic() - t1
        await self.capture()
        ctx = a.context_length
        self.log.info(f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                      f"max_running_requests={a.max_running_requests}, context_len={ctx}, "
                      f"available_gpu_mem={self.avail:.2f} GB")
        if self.new:
            self.log.info("Init Unified Radix Cache. Components: (<ComponentType.FULL: 0>,). Tree Core: "
                          "RustUnifiedTreeCore")
            self.log.info("Tree cache initialized: source=default impl=UnifiedRadixCache hybrid_swa=False "
                          "hybrid_ssm=False hicache_attached=False")
        elif release(a.version) >= (0, 5, 15):
            self.log.info("Tree cache initialized: source=default impl=RadixCache hybrid_swa=False hybrid_ssm=False "
                          "hierarchical=False streaming_wrapped=False")
        if release(a.version) >= (0, 5, 15):  # recorded on 0.5.17 and 0.5.23: key=value, every graph kind
            g = {k.replace(" ", "_"): v for k, v in self.graph_s.items()}
            g = {"target_verify": g.get("target_verify", 0.0), "draft_decode": g.get("draft_verify", 0.0),
                 "decode": g.get("target_decode", 0.0)}
            graphs = ", ".join(f"{k}={g.get(k, 0.0):.2f}" for k in
                               ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend"))
            self.log.info(f"Engine startup timings (s): load_weight={self.timings['load_weight']:.2f}, "
                          f"kv_cache_allocation={self.timings['kv_cache_allocation']:.2f}, "
                          f"scheduler_e2e={time.monotonic() - t0:.2f}, cuda_graph={{{graphs}}}, tokenizer_e2e=40.04")
        await self.pause(0.04)

    async def capture(self) -> None:
        a, L = self.args, self.args.load_seconds
        names = ["target verify", "draft verify"] if a.speculative else ["target decode"]
        bs_list = [b for b in CAPTURE_BS if b <= a.max_running_requests] or [1]
        self.graph_s = {}
        mid = (0, 5, 15) <= release(a.version) < (0, 5, 20)
        for name in names:
            t = time.monotonic()
            ntok = a.block_size if a.speculative else 1
            if a.version == "0.5.11":
                self.log.info(f"Capture cuda graph begin. This can take up to several minutes. "
                              f"avail mem={self.avail:.2f} GB")
            elif mid:  # recorded on 0.5.17: bs= on the begin line, not on the end line
                self.log.info(f"Capture {name} CUDA graph begin. backend=full, num_tokens_per_req={ntok}, "
                              f"bs={bs_list}, avail mem={self.avail:.2f} GB")
            else:
                self.log.info(f"Capture {name} CUDA graph begin. backend=full, num_tokens_per_req={ntok}, "
                              f"avail mem={self.avail:.2f} GB")
            begin = self.avail
            await self.hang_if("capture")
            order = list(reversed(bs_list))
            seconds = L * 0.35 / len(names)

            def desc(i: int, order=order, begin=begin) -> str:
                bs = order[min(i, len(order) - 1)]
                return f"Capturing batches (bs={bs} avail_mem={begin - GRAPH_GB * i / len(order):.2f} GB)"

            fail = a.fail_at == "capture"
            await self._bar("", len(order) if not fail else len(order) // 2, seconds if not fail else seconds / 2,
                            "graphs", desc)
            if fail:
                self.fatal("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. "
                           "GPU 0 has a total capacity of 79.19 GiB of which 1.12 GiB is free.\n"
                           + POSSIBLE_SOLUTIONS + OOM)
            elapsed = time.monotonic() - t
            self.graph_s[name] = elapsed
            if a.version == "0.5.11":
                self.log.info(f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. mem usage={GRAPH_GB:.2f} GB. "
                              f"avail mem={self.use(GRAPH_GB):.2f} GB.")
            elif mid:
                self.log.info(f"Capture {name} CUDA graph end. elapsed={elapsed:.2f} s, "
                              f"mem usage={GRAPH_GB:.2f} GB, avail mem={self.use(GRAPH_GB):.2f} GB.")
            else:
                self.log.info(f"Capture {name} CUDA graph end. bs={bs_list}, elapsed={elapsed:.2f} s, "
                              f"mem usage={GRAPH_GB:.2f} GB, avail mem={self.use(GRAPH_GB):.2f} GB.")
                if name == "target verify":  # recorded on 0.5.23, between the two captures
                    self.log.info("DFLASH draft greedy head folded into the draft cuda graph (tp=1).")

    def after_bind(self) -> None:
        a = self.args
        self.log.info(f"INFO:     Started server process [{os.getpid()}]")
        self.log.info("INFO:     Waiting for application startup.")
        self.log.info("INFO:     Application startup complete.")
        self.log.info(f"INFO:     Uvicorn running on http://{a.host}:{a.port} (Press CTRL+C to quit)")

    def bind_error(self, errno: int = 98) -> None:
        self.log.raw(f"[{stamp()}] ERROR:    "
                     f"[Errno {errno}] error while attempting to bind on address ('{self.args.host}', "
                     f"{self.args.port}): address already in use\n")
