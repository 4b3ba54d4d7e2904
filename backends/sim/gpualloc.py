"""``--sim-gpu-alloc-gib X``: make the simulator hold real GPU memory, as a loaded SGLang server does.

Through the CUDA driver API (``libcuda.so.1`` with ctypes: no torch, no build step) it allocates X
GiB on the first GPU of its ``CUDA_VISIBLE_DEVICES`` and keeps it until the process exits, so NVML
lists the simulator's pid on exactly the GPU its lane was given. Plain device memory
(``cuMemAlloc``), never managed memory. Where there is no driver the allocation fails with the
driver's own error name and the simulator dies like a server whose CUDA init failed.
"""

from __future__ import annotations

import ctypes
import os

GIB = 2**30


class GpuAllocError(RuntimeError):
    """The driver refused (no driver, no GPU visible, out of memory); the message names its error."""


class Held:
    """The context and the allocation; referenced for the process's life so nothing frees them."""

    def __init__(self, lib: ctypes.CDLL, context: ctypes.c_void_p, pointer: ctypes.c_uint64, size: int,
                 device_name: str) -> None:
        self.lib, self.context, self.pointer, self.size, self.device_name = lib, context, pointer, size, device_name


def _error_name(lib: ctypes.CDLL, code: int) -> str:
    text = ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(code, ctypes.byref(text)) == 0 and text.value:
            return text.value.decode()
    except AttributeError:
        pass
    return f"CUDA driver error {code}"


def allocate(gib: float) -> Held:
    """Allocate ``gib`` GiB on device 0 of this process's visible GPUs, touching it so it is committed."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise GpuAllocError(f"no CUDA driver (libcuda.so.1): {exc}") from None

    def check(code: int, what: str) -> None:
        if code != 0:
            raise GpuAllocError(f"{what}: {_error_name(lib, code)} "
                                f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})")

    check(lib.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(lib.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet(0)")
    name = ctypes.create_string_buffer(256)
    check(lib.cuDeviceGetName(name, 256, device), "cuDeviceGetName")
    context = ctypes.c_void_p()
    check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    size = int(gib * GIB)
    pointer = ctypes.c_uint64()
    check(lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size)), f"cuMemAlloc({gib:g} GiB)")
    check(lib.cuMemsetD8_v2(pointer, ctypes.c_ubyte(0), ctypes.c_size_t(size)), "cuMemsetD8")
    check(lib.cuCtxSynchronize(), "cuCtxSynchronize")
    return Held(lib, context, pointer, size, name.value.decode(errors="replace"))
