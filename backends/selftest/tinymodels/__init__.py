"""Tiny models for ``ddtune selftest``: a Qwen3 target and two DFlash drafts, built offline.

``build_tiny.py`` beside this file is shipped as package data and run by the *server's*
interpreter (which has torch, safetensors and tokenizers); it imports nothing from ddtune.
"""

from pathlib import Path

BUILDER = Path(__file__).resolve().parent / "build_tiny.py"
