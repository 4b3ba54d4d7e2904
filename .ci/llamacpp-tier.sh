#!/usr/bin/env bash
# The real-engine tier: ddtune's whole loop (lifecycle, bench, load, sweep, A/B, search, two lanes,
# selftest, the console in tmux) against real llama.cpp servers with DFlash on the CPU. Installs the
# `llamacpp` extra (pinned: xllamacpp 2026.10.11549 = llama.cpp b11549, gguf 0.19.0, numpy) from
# PyPI into the given environment and runs tests/llamacpp_tier with DDTUNE_LLAMACPP_TIER=1. Fails,
# never skips, when the engine cannot be installed or does not start.
#   .ci/llamacpp-tier.sh [VENV_DIR]      (default: .venv, made by the README's test command)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv}
if [ ! -x "$venv/bin/python" ]; then
    echo "llamacpp-tier: no environment at $venv (run the README's test command first)" >&2
    exit 1
fi
check() {
    "$venv/bin/python" - <<'PY'
import importlib.metadata as m
import gguf, numpy, xllamacpp  # noqa: F401  (each must import)
want = "2026.10.11549"
got = m.version("xllamacpp")
assert got == want, f"xllamacpp {got} is installed, the tier is pinned to {want}"
PY
}
# installed only when missing (CI's cached environment has it): the install rebuilds ddtune's own editable wheel
if ! check 2>/dev/null; then
    "$venv/bin/pip" install -q -e '.[test,llamacpp]' \
        || { echo "llamacpp-tier: cannot install the llamacpp extra (xllamacpp, gguf, numpy) into $venv" >&2; exit 1; }
    check || { echo "llamacpp-tier: the llamacpp extra does not work in $venv" >&2; exit 1; }
fi
# one worker: the comparisons time real servers, and a second worker's servers on the same two cores
# would be measured with them (at -n 2 a sweep once named the slower n_max)
DDTUNE_LLAMACPP_TIER=1 exec "$venv/bin/python" -m pytest -q -n 1 -m llamacpp tests/llamacpp_tier
