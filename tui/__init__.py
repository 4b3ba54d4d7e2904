"""ddtune: a terminal console for tuning SGLang speculative decoding."""


def __getattr__(name: str) -> str:
    """``tui.__version__``: the installed metadata's version (backends/core/version.py), looked up
    only when asked, so importing the console does not pay for importlib.metadata."""
    if name == "__version__":
        from backends.core import ddtune_version

        return ddtune_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
