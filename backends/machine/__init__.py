"""The machine under the server: GPUs (NVML), host CPU and memory, and GPU sets for parallel lanes.

The face: what the measurements take from the machine (GPU sets for lanes, the GPU sampler, a server's
process tree); like every family face it loads a module on first use and its stub types the names.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.machine.gpu": ("GpuSampler",),
    "backends.machine.gpuset": ("GpuIdentity", "choose", "differences", "groups", "inventory", "parse_gpus",
                                "sharing"),
    "backends.machine.host": ("server_tree_pids",),
})
