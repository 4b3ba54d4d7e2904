"""Fixed views for snapshot and Pilot tests: every input pinned (no clock, no sampling)."""

from backends.logs.kind import read_lines
from tui import messages as m
from tui.views import GpuRow, GpuView, KnobRow, ServerView
from workloads.stats.estimate import Estimate, ratio
from workloads.live.ab import Comparison, ConfigFigures

LOADING = ServerView(
    pid=4242, url="http://127.0.0.1:30000", version="0.5.23", phase="loading-weights",
    detail="target shard 3/8", progress=0.375, elapsed_s=12, eta_s=40,
    knobs=(KnobRow("budget", "8", None, None), KnobRow("topk", "4", None, None), KnobRow("window", "2048", None, None)),
)
READY_MISMATCH = ServerView(
    pid=4242, url="http://127.0.0.1:30000", version="0.5.23", phase="ready", uptime_s=300,
    knobs=(KnobRow("budget", "8", "8", True), KnobRow("topk", "4", "4", True),
           KnobRow("window", "2048", "None", False)),
)
VERIFIED = (KnobRow("budget", "8", "8", True), KnobRow("topk", "4", None, None),
            KnobRow("window", "2048", "2048", True))
READY = ServerView(pid=4242, url="http://127.0.0.1:30000", version="0.5.23", phase="ready", uptime_s=3725,
                   knobs=VERIFIED)
RESTARTING = ServerView(
    pid=4242, url="http://127.0.0.1:30000", version="0.5.23", phase="stopping-old", elapsed_s=3, eta_s=95,
    knobs=(KnobRow("budget", "8", None, None), KnobRow("topk", "4", None, None), KnobRow("window", "1024", None, None)),
    note="stopping old server pid 4242 (SIGTERM, then SIGKILL after 30 s)",
)
FAILED = ServerView(
    pid=4250, url="http://127.0.0.1:30000", version="0.5.23", phase="failed",
    knobs=(KnobRow("budget", "8", None, None), KnobRow("topk", "4", None, None), KnobRow("window", "2048", None, None)),
    fatal="oom: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 139.8 GiB total)",
)
NO_GPU = GpuView(available=False, reason="no NVIDIA driver found (libnvidia-ml.so.1 not loadable)")
EIGHT_GPUS = GpuView(
    available=True,
    rows=tuple(GpuRow(i, "NVIDIA H200", 131.2, 143.8, 120.5, 60 + i * 4, 612.0, 700.0, 60 + i,
                      (10, 40, 80, 95, 90, 88, 60 + i * 4)) for i in range(8)),
    server_summary="server: 964.0 GiB on 8 GPUs, pids 4242, 4250-4257",
    host="host: cpu 12%  ram 80.1/503.7 GiB  server tree: cpu 310%  rss 42.0 GiB",
)
# the console's server on GPU 0, a parallel sweep's two lane servers on GPUs 1 and 2, GPU 3 idle
LANE_GPUS = GpuView(
    available=True,
    rows=(GpuRow(0, "NVIDIA H200", 124.0, 143.8, 120.5, 71, 580.0, 700.0, 61, (60, 70, 71)),
          GpuRow(1, "NVIDIA H200", 82.3, 143.8, 0.0, 88, 610.0, 700.0, 63, (10, 80, 88), lane_gib=80.1),
          GpuRow(2, "NVIDIA H200", 82.1, 143.8, 0.0, 86, 605.0, 700.0, 62, (10, 79, 86), lane_gib=80.1),
          GpuRow(3, "NVIDIA H200", 0.6, 143.8, 0.0, 0, 72.0, 700.0, 35, (0, 0, 0))),
    server_summary="server: 120.5 GiB on 1 GPU, pids 4242, 4250",
    host="host: cpu 30%  ram 120.4/503.7 GiB  server tree: cpu 110%  rss 12.0 GiB",
    lanes=("lane 0 GPU 1 server pid 5120: 80.1G on GPU 1", "lane 1 GPU 2 server pid 5188: 80.1G on GPU 2"),
)
LOG = [
    "[2026-11-30 09:00:08] Load weight begin. avail mem=138.20 GB",
    "[2026-11-30 09:00:14] Load weight end. elapsed=6.01 s, type=Qwen3ForCausalLM, avail mem=122.80 GB, "
    "mem usage=15.40 GB.",
    "[2026-11-30 09:00:15] Initialized DFLASH draft runner. attention_backend=flashinfer, model=DFlashDraftModel, "
    "block_size=16, draft_window_size=None, compact_cache=False",
    "[2026-11-30 09:00:16] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 700000, K size: 48.06 GB, "
    "V size: 48.06 GB",
    "[2026-11-30 09:00:34] The server is fired up and ready to roll!",
    "[2026-11-30 09:01:00 TP0] Decode batch, #running-req: 8, #token: 9000, token usage: 0.01, accept len: 6.12, "
    "accept rate: 0.38, cuda graph: True, gen throughput (token/s): 2100.55, #queue-req: 0",
]


W2048 = ConfigFigures(1, {"budget": 8, "topk": 4, "window": 2048}, None, Estimate(1512.4, 9.1, 5, 6, "repeats"),
                      Estimate(5.62, 0.04, 40, 41, "repeats"), 6, 41, 38, 41, False)
W1024 = ConfigFigures(2, {"budget": 8, "topk": 4, "window": 1024}, "window 2048 -> 1024",
                      Estimate(1699.8, 10.2, 4, 5, "repeats"), Estimate(5.71, 0.05, 33, 34, "repeats"), 5, 34, 33, 34,
                      False)
AB = Comparison(W1024, W2048, False, ratio(W1024.tok_s, W2048.tok_s), ratio(W1024.acceptance, W2048.acceptance))


def feed(screen, server=READY_MISMATCH, gpu=EIGHT_GPUS, points=40, requests=12, ab=False, no_spec=False):
    screen.post_message(m.ServerChanged(server))
    screen.post_message(m.GpuSampled(gpu))
    screen.post_message(m.LogLinesRead(read_lines(LOG)))
    for i in range(points):
        lift = 190.0 if ab and i >= points // 2 else 0.0  # after the marker: the second configuration
        screen.post_message(m.LoadWindowUpdated(1000.0 + i, 1500.0 + lift + 20 * (i % 7), 5.5 + 0.05 * (i % 9), 8,
                                                1480.0 + lift + 45 * (i % 5)))
        screen.post_message(m.DecodeStatsRead(1000.0 + i, 1450.0 + lift + 15 * (i % 5), 5.6))
        if ab and i == points // 2:
            screen.post_message(m.ConfigMarked(1000.0 + i, "window 2048 -> 1024"))
    if ab:
        screen.post_message(m.ComparisonChanged(AB))
    if no_spec:
        screen.post_message(m.NoSpecBaselineFound(612.0, "load run 20261130T090000Z-load"))
    for i in range(requests):
        screen.post_message(m.RequestFinished({
            "problem": ["fib", "gcd", "is_palindrome", "word_count"][i % 4], "tokens": 300 + i,
            "tok_s": 190.0 + i, "accept_len": 6.0 + i / 10, "ttft_s": 0.041,
            "verdict": "fail" if i % 5 == 4 else "pass"}))


def idle_console():
    """A console controller never attached (no server started): for a screen that needs one to be
    built but runs nothing on it."""
    from backends.knobs.config import config_from_dict
    from tui.controller import ConsoleController

    return ConsoleController(config_from_dict({}, "defaults"), simulated=True)


async def laid_out(pilot, predicate, timeout_s: float = 10.0) -> None:
    """Return once ``predicate()`` holds, or after ``timeout_s`` (the caller's assert then says what is
    wrong): a change to a widget is rendered and laid out some frames later, more of them on a loaded
    machine, so one ``pilot.pause()`` is not enough to judge it."""
    for _ in range(int(timeout_s / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
