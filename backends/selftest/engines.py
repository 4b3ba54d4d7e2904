"""What ``ddtune selftest`` does differently per engine, in one table: how the tiny models are built,
which verified settings make the draft check, which knob the restart moves, what the agreeing draft
should reach, and how each engine is asked to generate (``backends.launch.dialect``).

Keyed by the config's engine (``ServerConfig.engine``: sglang, llamacpp), never by backend or class.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from backends.knobs.config import ServerConfig
from backends.knobs.plan import as_count
from backends.launch.dialect import LLAMACPP, SGLANG, Dialect


@dataclass(frozen=True)
class Built:
    """The tiny models: paths (target, draft_agree, draft_random) and what the builder said."""

    info: dict
    detail: str


@dataclass(frozen=True)
class EngineTest:
    label: str
    dialect: Dialect
    build: Callable[[ServerConfig, str, int], tuple]  # (Check, the models' description or None)
    draft_settings: tuple[str, ...]           # the checks the draft line must give
    default_ok: bool                          # ... or the server's default when unset (else: verified only)
    draft_line: str                           # what the server's line that says them is called
    restart_knob: str                         # the knob the restart moves (with the random draft)
    start_at_block: bool                      # unset, restart_knob starts at the draft's block - 1
    tokens: int                               # each agreeing request's max tokens
    move: Callable[[ServerConfig, int], int]  # the restart's value of restart_knob
    ceiling: Callable[[ServerConfig, int, dict], float]  # the most one step can yield (agree's yardstick)
    ceiling_label: str                        # what that is, said with its value


def _other_window(config: ServerConfig, block: int) -> int:
    from backends.selftest.plan import other_window

    return other_window(as_count(config.knobs.get("window")), block)


def _other_n_max(config: ServerConfig, block: int) -> int:
    """Half the drafting the start ran (at least 1): a value the draft's block never clamps."""
    return max(1, (as_count(config.knobs.get("n_max")) or block - 1) // 2)


def _llama_ceiling(config: ServerConfig, block: int, effective: dict) -> float:
    n_max = as_count(effective.get("n_max")) or as_count(config.knobs.get("n_max")) or block - 1
    return float(min(n_max, block - 1) + 1)


def _build_torch(config: ServerConfig, out: str, block: int) -> tuple:
    from backends.selftest.checks import build_models

    return build_models(config, out, block)


def _build_gguf(config: ServerConfig, out: str, block: int) -> tuple:
    """llama.cpp's tiny models as the build check: ddtune's own GGUF builder (``build_gguf``)."""
    from backends.selftest.checks import Check

    failure, built = build_gguf(config, out, block)
    if built is None:
        return Check("build", "fail", failure or "the builder failed",
                     "install the llamacpp extra into ddtune's environment: pip install 'ddtune[llamacpp]'"), None
    return Check("build", "pass", built.detail), built.info


SGLANG_TEST = EngineTest("SGLang", SGLANG, _build_torch, ("window", "compact_cache"), False, "draft runner line",
                         "window", False, 64, _other_window, lambda config, block, effective: float(block),
                         "block size")
LLAMACPP_TEST = EngineTest("llama.cpp", LLAMACPP, _build_gguf, ("n_max",), True, "draft-dflash startup line",
                           "n_max", True, 256, _other_n_max, _llama_ceiling, "n_max + 1")
TESTS = {"sglang": SGLANG_TEST, "llamacpp": LLAMACPP_TEST}


def engine_test(config: ServerConfig) -> EngineTest:
    return TESTS.get(config.engine, SGLANG_TEST)


def build_gguf(config: ServerConfig, out: str, block: int) -> tuple[str | None, Built | None]:
    """llama.cpp's tiny GGUF target and drafts, by ddtune's own builder under ddtune's interpreter
    (gguf and numpy: the llamacpp extra). (failure, None) or (None, the models)."""
    argv = [sys.executable, "-P", "-m", "backends.selftest.tinymodels.gguf_tiny", "--out", out,
            "--block-size", str(block)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env=dict(os.environ))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the tiny-GGUF builder could not run: {exc}", None
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        return f"the tiny-GGUF builder failed (exit {done.returncode}): {tail}", None
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"the tiny-GGUF builder printed no description: {done.stdout[-200:]!r}", None
    return None, Built(info, f"tiny qwen3 GGUF target + agreeing and random DFlash drafts (block {block}, "
                             f"mask token {info.get('mask_token_id')}) in {info.get('seconds')} s, by ddtune's "
                             "builder (gguf + numpy)")
