#!/usr/bin/env bash
# Optional test tier: check that the launch commands ddtune builds are accepted by SGLang's own
# argument parser. Builds a virtual environment with sglang==0.5.23 (--no-deps), CPU torch, the
# few packages SGLang's argparse import path needs, and a stub of triton (no kernels run here),
# then runs the tests marked `sglang` against it.
#   .ci/sglang-tier.sh [VENV_DIR]      (default: .sglang-tier)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.sglang-tier}
# the marker says the build finished: an environment a killed run left half-built is built again
if [ ! -f "$venv/.ddtune-tier-built" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --no-deps sglang==0.5.23
    "$venv/bin/pip" install -q torch==2.13.0          # CPU build; pulls its own small deps
    # What importing sglang.srt.server_args and `python -m sglang.launch_server --help` need.
    "$venv/bin/pip" install -q --no-deps numpy orjson psutil pybase64 requests urllib3 idna certifi \
        packaging pillow starlette anyio msgspec pydantic pydantic_core typing_inspection pyzmq tqdm \
        IPython traitlets pygments aiohttp multidict attrs yarl propcache aiohappyeyeballs aiosignal \
        frozenlist huggingface-hub
    site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    cp -r .ci/triton-stub/triton "$site/"
    touch "$venv/.ddtune-tier-built"
fi
"$venv/bin/python" -W ignore -c "from sglang.srt.server_args import prepare_server_args" \
    || { echo "sglang-tier: SGLang's server_args does not import in $venv" >&2; exit 1; }
DDTUNE_SGLANG_PYTHON="$(cd "$venv" && pwd)/bin/python" exec "${PYTHON:-python3}" -m pytest -q -m sglang tests/sglang_tier
