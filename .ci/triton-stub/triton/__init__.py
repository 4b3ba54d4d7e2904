"""Stub of triton for argparse-only use of SGLang (ddtune's sglang tier): no kernels run."""
__version__ = "3.4.0"


def _decorator(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


jit = autotune = heuristics = _decorator


class Config:
    def __init__(self, *args, **kwargs):
        self.kwargs = kwargs


def cdiv(a, b):
    return -(-a // b)


def next_power_of_2(n):
    return 1 << (int(n) - 1).bit_length()


from triton import language as language  # noqa: E402  (`as`: re-exported, `import triton` makes triton.language usable)
