#!/bin/bash
# The console's cost beside nvitop on the lent H200, in one device call, in the same run:
#   bash benchmarks/console_cost_device.sh [ROUNDS]     (carry .sgl: docs/real-sglang.md says how to fill .sgl/whl;
#                                                       add nvitop's wheel there too)
# Each round measures nvitop (its default 2 s refresh) and then the ddtune console (its simulator started
# first with `ddtune up`, so the window sees the console at rest with the server ready) for 30 s each on
# a 200x50 pty with benchmarks/console_cost.py; then benchmarks/load_cost.py measures `ddtune --load 32`
# (UI process, load worker, graders) twice under each sandbox the box can make: util-linux unshare,
# and bubblewrap where .sgl/bwrap holds a bwrap binary (with its libraries, for a box without it).
# Both read the real GPU through NVML. Figures land in $OUT.
set -u
OUT=${OUT:-/tmp/cost_out}; mkdir -p "$OUT"
exec > >(tee -a "$OUT/cost.log") 2>&1
ROUNDS=${1:-2}
T0=$(date +%s); log() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/ddsite .sgl/whl/*.whl || exit 2
export PYTHONPATH=/tmp/ddsite:$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1 XDG_CONFIG_HOME=/tmp/cost/cfg
nproc; nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv,noheader
for r in $(seq 1 "$ROUNDS"); do
  log "round $r: nvitop"
  python3 benchmarks/console_cost.py --cmd "python3 -m nvitop" --settle 5 --json --cwd /tmp >"$OUT/nvitop-$r.json"
  state="/tmp/cost/state-$r"; rm -rf "$state"; mkdir -p "$state"; chmod 700 "$state"
  DDTUNE_STATE_DIR="$state" python3 -m tui.cli up >/dev/null 2>"$OUT/up-$r.txt" || { log "up failed"; cat "$OUT/up-$r.txt"; }
  log "round $r: ddtune console"
  python3 benchmarks/console_cost.py --settle 10 --env "DDTUNE_STATE_DIR=$state" --json >"$OUT/ddtune-$r.json"
  DDTUNE_STATE_DIR="$state" python3 -m tui.cli down >/dev/null 2>&1
done
if ! command -v bwrap >/dev/null && [ -x .sgl/bwrap/bwrap.real ]; then
  mkdir -p /tmp/bwbin
  if .sgl/bwrap/bwrap.real --version >/dev/null 2>&1; then ln -sf "$PWD/.sgl/bwrap/bwrap.real" /tmp/bwbin/bwrap
  else printf '#!/bin/sh\nexec /lib64/ld-linux-x86-64.so.2 --library-path %s %s "$@"\n' "$PWD/.sgl/bwrap" \
         "$PWD/.sgl/bwrap/bwrap.real" >/tmp/bwbin/bwrap; chmod 755 /tmp/bwbin/bwrap; fi
  export PATH=/tmp/bwbin:$PATH
fi
for sandbox in unshare bwrap; do
  DDTUNE_SANDBOX=$sandbox python3 -m tui.cli doctor 2>&1 | grep -A7 "grading sandbox" | head -8
  for r in 1 2; do
    log "load: ddtune --load 32, $sandbox sandbox, run $r"
    DDTUNE_SANDBOX=$sandbox python3 benchmarks/load_cost.py --modes console --concurrency 32 2>&1 | tail -6 \
      | tee "$OUT/load-$sandbox-$r.txt"
  done
done
python3 - "$OUT" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
for name in ("nvitop", "ddtune"):
    for path in sorted(glob.glob(os.path.join(out, f"{name}-*.json"))):
        try:
            doc = json.load(open(path))
        except ValueError:
            print(f"{os.path.basename(path)}: no figures"); continue
        print(f"{os.path.basename(path):14} {doc['cpu_pct_tree']:5.2f}% of a core (program alone "
              f"{doc['cpu_pct_root']:.2f}%), {doc['bytes_per_s']:7.0f} B/s, RSS {doc['rss_end'] / 2**20:.0f} MiB")
EOF
log "done"
