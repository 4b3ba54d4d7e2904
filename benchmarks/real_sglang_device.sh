#!/bin/bash
# The real-server tier on the lent H200, in one device call (docs/real-sglang.md says how to prepare
# .sgl/: SGLang 0.5.17's slim bundle, its JIT cache, the tiny-model builder, ddtune's own wheels).
#   bash benchmarks/real_sglang_device.sh [benchmarks/real_sglang.py flags]
# Prints the tier's PASS/FAIL lines; its files land in $OUT.
set -u
OUT=${OUT:-/tmp/real_out}; mkdir -p "$OUT"
exec > >(tee -a "$OUT/tier.log") 2>&1
T0=$(date +%s); log() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
if [ ! -d /tmp/sgl/site/sglang ]; then
  log "unpack SGLang"; mkdir -p /tmp/sgl/tvmffi
  tar -C /tmp/sgl -xJf .sgl/site.tar.xz && tar -C /tmp/sgl/tvmffi -xzf .sgl/jitcache.tar.gz || exit 2
fi
# the slim bundle drops flashinfer's JIT sources: sgl_kernel's own compiled ops instead
sed -i 's/^    _has_flashinfer = True/    _has_flashinfer = False/' /tmp/sgl/site/sgl_kernel/elementwise.py \
  /tmp/sgl/site/sgl_kernel/sampling.py
for mode in agree random; do
  [ -d /tmp/t_$mode/target ] || PYTHONPATH=/tmp/sgl/site python3 .sgl/build_tiny_models.py --out /tmp/t_$mode \
    --mode $mode | tail -1
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/ddsite .sgl/whl/*.whl || exit 2
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
LIBP=""
if [ ! -e "$CUDA_HOME/lib64/libcudart.so" ]; then
  mkdir -p /tmp/sgl/lib; LIBP=/tmp/sgl/lib
  CU=$(python3 -c "import nvidia.cu13, os; print(os.path.dirname(nvidia.cu13.__file__))")/lib
  ln -sf "$CU/libcudart.so.13" /tmp/sgl/lib/libcudart.so
fi
command -v c++ >/dev/null || { mkdir -p /tmp/sgl/bin; ln -sf "$(command -v g++)" /tmp/sgl/bin/c++; }
export PYTHONPATH=/tmp/ddsite:$PWD:/tmp/sgl/site:$PWD/.sgl/dsstub PYTHONUNBUFFERED=1
export DDTUNE_STATE_DIR=/tmp/dd/state XDG_CONFIG_HOME=/tmp/dd/cfg XDG_CACHE_HOME=/tmp/dd/cache
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1
log "tier"
python3 benchmarks/real_sglang.py --python "$(command -v python3)" --agree /tmp/t_agree --random /tmp/t_random \
  --out "$OUT" --env PYTHONPATH=/tmp/sgl/site:$PWD/.sgl/dsstub --env PATH=/tmp/sgl/bin:$PATH \
  --env CUDA_HOME="$CUDA_HOME" --env LIBRARY_PATH="$LIBP" --env TVM_FFI_CACHE_DIR=/tmp/sgl/tvmffi \
  --env TRITON_CACHE_DIR=/tmp/sgl/triton --env SGLANG_IS_FLASHINFER_AVAILABLE=false --env HF_HUB_OFFLINE=1 \
  --env TRANSFORMERS_OFFLINE=1 --env NCCL_NVLS_ENABLE=0 --env TORCH_SYMM_MEM_DISABLE_MULTICAST=1 "$@" -- \
  --attention-backend triton --sampling-backend pytorch --grammar-backend none --mem-fraction-static 0.1 \
  --max-total-tokens 262144 --mm-feature-transport cpu --decode-log-interval 10 --disable-prefill-cuda-graph \
  --cuda-graph-max-bs-decode 8
rc=$?
log "tier exit $rc"
exit $rc
