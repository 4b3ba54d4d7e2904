"""Stub of triton.language: names only."""


class constexpr:  # noqa: N801
    def __init__(self, value=None):
        self.value = value


def __getattr__(name):
    return constexpr
