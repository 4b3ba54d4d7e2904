"""``--parallel N [--gpus 0,1] [--gpus-per-server K] [--share-gpu]``: the lane options of ``ddtune sweep``,
``ddtune ab`` and ``ddtune search`` (the lanes themselves: workloads.sweep.lanes)."""

from __future__ import annotations

from tui.commands._options import count_option


def add_lane_options(parser) -> None:
    parser.add_argument("--parallel", type=count_option("lanes"), default=None, metavar="N",
                        help="run up to N servers at once, each on its own GPU set and port (docs/scale.md)")
    parser.add_argument("--gpus", metavar="LIST", default=None,
                        help="GPUs for --parallel, e.g. 0,1,2,3 (default: every GPU no other process uses; "
                             "required where NVML cannot list GPUs, as with the simulator)")
    parser.add_argument("--gpus-per-server", type=count_option("lanes"), default=None, metavar="K",
                        help="GPUs per server with --parallel (default 1; match the server's --tp-size)")
    parser.add_argument("--share-gpu", action="store_true", default=None,
                        help="let lanes share a GPU (--gpus 0,0, or --parallel beyond the GPUs): their servers "
                             "start one at a time and their throughput interferes; runs are labelled shared-GPU")


def lane_options(args) -> dict:
    """--parallel/--gpus/--gpus-per-server/--share-gpu as given (None: not given), for the sweep's or the
    search's spec; the use case falls back to what a resumed one recorded."""
    return {"parallel": getattr(args, "parallel", None), "gpus": getattr(args, "gpus", None),
            "gpus_per_server": getattr(args, "gpus_per_server", None),
            "share_gpu": bool(getattr(args, "share_gpu", None))}
