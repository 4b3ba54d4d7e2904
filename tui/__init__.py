"""ddtune: a terminal console for tuning SGLang speculative decoding."""

__version__ = "0.1.0"
