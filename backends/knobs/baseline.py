"""A server config without speculative decoding: the lossless baseline ``ddtune up --no-speculation``
starts and a sweep's ``--baseline`` slot measures."""

from __future__ import annotations

from dataclasses import replace

from backends.knobs.config import ServerConfig

# extra_args that turn speculation on; the baseline drops them (flag + value)
_SPEC_VALUE_FLAGS = ("--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-draft-tokens",
                     "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-dflash-block-size")


def baseline_config(base: ServerConfig) -> ServerConfig:
    """The same server without speculative decoding: no draft model, every knob cleared."""
    args: list[str] = []
    skip = False
    for arg in base.extra_args:
        if skip:
            skip = False
            continue
        if arg in _SPEC_VALUE_FLAGS:
            skip = True
            continue
        if arg.split("=", 1)[0] in _SPEC_VALUE_FLAGS or arg.startswith("--speculative-"):
            continue
        args.append(arg)
    env = {k: v for k, v in base.env.items() if not k.startswith("SGLANG_DDTREE")}
    return replace(base, draft_model=None, knobs={k: None for k in base.knobs}, extra_args=tuple(args), env=env)
