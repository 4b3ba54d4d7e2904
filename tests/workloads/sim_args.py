"""Simulator command lines the workload tests share."""

SPEC = ("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "demo-draft")
FAST = ("--sim-step-ms", "0")
SEPARATED = (*SPEC, *FAST, "--reasoning-parser", "qwen3")
INLINE = (*SPEC, *FAST)
