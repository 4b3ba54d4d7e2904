"""What ``ddtune selftest`` launches: the user's server config with tiny models in place of theirs.

Pure, apart from ``free_port``. The user's interpreter, flags, env and knobs are kept; the model
and draft paths, the port and the block size are the selftest's; flags that cannot apply to a
tiny single-GPU model (parallel sizes, quantization, model-specific parsers and templates, the
context length, multi-node settings) are set aside and named, with the reason.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, replace

from backends.knobs.config import ServerConfig
from backends.knobs.plan import DEFAULT_BLOCK_SIZE, as_count

# flag -> (takes a value, why a tiny model cannot take it)
_PARALLEL = "a parallel size: the tiny model runs on one GPU"
_MODEL = "belongs to your model, not the tiny Qwen3"
SET_ASIDE: dict[str, tuple[bool, str]] = {
    **{f: (True, _PARALLEL) for f in (
        "--tp-size", "--tp", "--tensor-parallel-size", "--dp-size", "--dp", "--data-parallel-size",
        "--pp-size", "--pipeline-parallel-size", "--ep-size", "--ep", "--expert-parallel-size",
        "--moe-dense-tp-size", "--attn-cp-size", "--nnodes", "--node-rank", "--dist-init-addr",
        "--base-gpu-id", "--gpu-id-step")},
    "--enable-dp-attention": (False, _PARALLEL),
    **{f: (True, "quantization: the tiny model's weights are bf16") for f in (
        "--quantization", "--quantization-param-path", "--speculative-draft-model-quantization")},
    **{f: (True, _MODEL) for f in (
        "--reasoning-parser", "--tool-call-parser", "--chat-template", "--completion-template",
        "--tokenizer-path", "--tokenizer-mode", "--json-model-override-args", "--revision",
        "--speculative-draft-model-revision", "--load-format", "--model-loader-extra-config",
        "--served-model-name", "--hf-chat-template-name", "--mm-attention-backend")},
    "--trust-remote-code": (False, _MODEL),
    "--context-length": (True, "the tiny model's context is 8192 tokens (its config.json)"),
    **{f: (True, "the selftest's own (its models, its free port)") for f in (
        "--model-path", "--model", "--speculative-draft-model-path", "--speculative-draft-model",
        "--port", "--host")},
}
BLOCK_FLAGS = ("--speculative-num-draft-tokens", "--speculative-dflash-block-size")


@dataclass(frozen=True)
class SetAside:
    args: tuple[str, ...]    # as written in extra_args (flag and value)
    why: str


def split_extra_args(extra: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[SetAside, ...]]:
    """(the flags kept, the flags set aside with why)."""
    kept: list[str] = []
    aside: list[SetAside] = []
    i = 0
    while i < len(extra):
        arg = extra[i]
        flag, eq, _ = arg.partition("=")
        rule = SET_ASIDE.get(flag) if arg.startswith("--") else None
        if rule is None:
            kept.append(arg)
            i += 1
            continue
        takes_value, why = rule
        n = 2 if takes_value and not eq and i + 1 < len(extra) else 1
        aside.append(SetAside(tuple(extra[i:i + n]), why))
        i += n
    return tuple(kept), tuple(aside)


def flags_of(extra: tuple[str, ...]) -> list[str]:
    """The long flags named in ``extra`` (``--a=1`` and ``--a 1`` alike), in order, once each."""
    seen: list[str] = []
    for arg in extra:
        if arg.startswith("--") and len(arg) > 2:
            flag = arg.split("=", 1)[0]
            if flag not in seen:
                seen.append(flag)
    return seen


def unknown_flags(extra: tuple[str, ...], help_flags: frozenset[str]) -> list[str]:
    """Flags of ``extra`` that this server's ``--help`` does not list (spelled for another release)."""
    return [flag for flag in flags_of(extra) if flag not in help_flags]


def block_size(config: ServerConfig) -> int:
    """The block size the tiny drafts are built with: the user's knob, flag or config, else 16."""
    knob = as_count(config.knobs.get("block_size"))
    if knob:
        return knob
    for i, arg in enumerate(config.extra_args):
        flag, eq, value = arg.partition("=")
        if flag in BLOCK_FLAGS:
            given = value if eq else (config.extra_args[i + 1] if i + 1 < len(config.extra_args) else "")
            if given.isdigit() and int(given) >= 2:
                return int(given)
    return config.block_size or DEFAULT_BLOCK_SIZE


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host if host not in ("0.0.0.0", "::", "") else "127.0.0.1", 0))
        return int(sock.getsockname()[1])


def derive(config: ServerConfig, target: str, draft: str, port: int, kept: tuple[str, ...],
           block: int, ready_timeout_s: float) -> ServerConfig:
    """The user's config serving the tiny models (no knob changed)."""
    return replace(config, model=target, draft_model=draft, port=port, extra_args=kept, block_size=block,
                   ready_timeout_s=min(config.ready_timeout_s, ready_timeout_s), url=None,
                   host=config.host if config.host not in ("0.0.0.0", "::", "") else "127.0.0.1",
                   source=f"{config.source} (selftest)")


def other_window(window: int | None, block: int) -> int:
    """A window the knob restart moves to: twice the current (half when that passes the tiny
    model's 8192 tokens), at least the block size; 4 blocks when the window is off."""
    if window is None:
        return max(block, 4 * block)
    moved = window * 2 if window * 2 <= 8192 else window // 2
    return max(block, moved if moved != window else window + block)
