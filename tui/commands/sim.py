"""ddtune sim: run the SGLang simulator server in the foreground (SGLang-style flags)."""

from __future__ import annotations

HELP = "run the built-in SGLang simulator server (SGLang's flags, plus --sim-*)"
PASSTHROUGH = True
EXAMPLES = """\
examples:
  ddtune sim --model-path demo --speculative-algorithm DFLASH --speculative-draft-model-path demo-draft \\
             --speculative-draft-window-size 2048 --port 30000
  SGLANG_DDTREE_MAX_TOPK=4 ddtune sim --model-path demo --speculative-algorithm DDTREE \\
             --speculative-draft-model-path demo-draft --speculative-ddtree-budget 8 --sim-load-seconds 1
"""


def run(args) -> int:
    from backends.sim import main

    return main(list(args.argv))
