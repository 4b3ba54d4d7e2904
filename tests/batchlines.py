"""The ``Decode batch`` / ``Prefill batch`` lines a real SGLang writes, built from the format strings
transcribed from its wheels (tests/data/real/<version>/batch_log_format.toml: the segments of each
line, in order, with the flags under which the source appends them).

``lines(version, kind)`` gives one line per combination of flags, with the flags and the values it
was formatted from; ``shape(version, kind, on)`` is the regex every such line with flags ``on``
matches, whatever its numbers (to check lines that someone else wrote: the simulator).
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REAL = Path(__file__).resolve().parent / "data" / "real"
VERSIONS = tuple(sorted(p.parent.name for p in REAL.glob("*/batch_log_format.toml")))
# one value per placeholder, each distinct so a field read from the wrong key shows
VALUES: dict[str, object] = {
    "batch_iter": 4711, "num_running_reqs": 7, "full_num_used": 2700, "full_token_usage": 0.11,
    "swa_num_used": 310, "swa_token_usage": 0.03, "mamba_num_used": 12, "mamba_usage": 0.05,
    "hisparse_device_tokens": 1900, "hisparse_device_token_usage": 0.07, "hisparse_host_tokens": 8800,
    "hisparse_host_token_usage": 0.21, "spec_accept_length": 3.52, "spec_accept_rate": 0.17,
    "spec_cap_length": 4.25, "spec_block_accept_length": 2.75, "pre_allocated_usage": 0.09,
    "prealloc_reqs": 2, "transfer_reqs": 1, "host_receive_reqs": 3, "retracted_reqs": 0,
    "waiting_image_reqs": 5, "can_run_cuda_graph": True, "last_gen_throughput": 610.4, "queue_reqs": 4,
    "tflops_per_s": 12.5, "read_gb_per_s": 900.25, "write_gb_per_s": 10.5, "fwd_occupancy": 87.5,
    "fwd_idle_occupancy": 99.0, "num_new_seqs": 2, "log_input_tokens": 158, "log_hit_tokens": 64,
    "num_pending_tokens": 0, "log_replay_tokens": 16, "bootstrap_reqs": 1, "inflight_reqs": 2,
    "optimistic_reqs": 0, "last_input_throughput": 559.53,
}
_FIELD = re.compile(r"\{(\w+)(?::([^}]*))?\}")


@cache
def load(version: str) -> dict:
    with open(REAL / version / "batch_log_format.toml", "rb") as f:
        return tomllib.load(f)


def flags(version: str, kind: str) -> tuple[str, ...]:
    """The flags that ``kind``'s segments depend on, in the order they first appear."""
    seen: dict[str, None] = {}
    for seg in load(version)[kind]:
        for w in seg.get("when", ()):
            seen[w.lstrip("!")] = None
    return tuple(seen)


def _segments(version: str, kind: str, on: frozenset[str]) -> Iterator[str]:
    for seg in load(version)[kind]:
        if all((w[1:] not in on) if w.startswith("!") else (w in on) for w in seg.get("when", ())):
            yield seg["text"]


def render(version: str, kind: str, on: frozenset[str], values: dict[str, object]) -> str:
    return "".join(_segments(version, kind, on)).format(**values)


def lines(version: str, kind: str) -> Iterator[tuple[frozenset[str], dict[str, object], str]]:
    """(flags on, values, line) for every subset of the flags; the graph label and the graph bool
    take each of their values in turn."""
    names = flags(version, kind)
    labels = load(version)["choices"]["graph_label"]
    for i, bits in enumerate(itertools.product((False, True), repeat=len(names))):
        on = frozenset(n for n, b in zip(names, bits, strict=True) if b)
        values = dict(VALUES, graph_label=labels[i % len(labels)], can_run_cuda_graph=i % 3 != 0)
        yield on, values, render(version, kind, on, values)


def shape(version: str, kind: str, on: frozenset[str]) -> re.Pattern[str]:
    """The regex of ``kind``'s line with flags ``on``: numbers as numbers, the graph label as one of
    the source's labels, the graph flag as True/False."""
    labels = "|".join(re.escape(x) for x in load(version)["choices"]["graph_label"])
    out = []
    for text in _segments(version, kind, on):
        pos = 0
        for m in _FIELD.finditer(text):
            out.append(re.escape(text[pos:m.start()]))
            name, spec = m.group(1), m.group(2)
            if name == "graph_label":
                out.append(f"(?:{labels})")
            elif name == "can_run_cuda_graph":
                out.append("(?:True|False)")
            elif spec and spec.endswith("f"):
                out.append(r"-?\d+\.\d{" + spec.strip(".f") + "}")
            else:
                out.append(r"-?\d+")
            pos = m.end()
        out.append(re.escape(text[pos:]))
    return re.compile("".join(out))
