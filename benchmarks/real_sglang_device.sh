#!/bin/bash
# The real-server tier on the lent H200, in one device call (docs/real-sglang.md says how to prepare
# the carried folder: an SGLang slim bundle, optionally its JIT caches, ddtune's own wheels).
#   [SGL=.sgl] bash benchmarks/real_sglang_device.sh [benchmarks/real_sglang.py flags]
# SGL (default .sgl, relative to the directory the call runs in) holds site.tar.xz and, if kept from an
# earlier call, jitcache.tar.gz (TVM-FFI's compiled kernels) and tritoncache.tar.gz; whl/ holds ddtune's
# dependencies the image lacks. The caches this call compiled are left in $OUT as jitcache.tar.gz and
# tritoncache.tar.gz for the next call. Prints the tier's PASS/FAIL lines; its files land in $OUT.
set -u
OUT=${OUT:-/tmp/real_out}; mkdir -p "$OUT"
SGL=$(readlink -f "${SGL:-.sgl}")
REPO=$(cd "$(dirname "$0")/.." && pwd)
exec > >(tee -a "$OUT/tier.log") 2>&1
T0=$(date +%s); log() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
if [ ! -d /tmp/sgl/site/sglang ]; then
  log "unpack SGLang"; mkdir -p /tmp/sgl/tvmffi /tmp/sgl/triton
  tar -C /tmp/sgl -xJf "$SGL/site.tar.xz" || exit 2
  [ -f "$SGL/jitcache.tar.gz" ] && tar -C /tmp/sgl/tvmffi -xzf "$SGL/jitcache.tar.gz"
  [ -f "$SGL/tritoncache.tar.gz" ] && tar -C /tmp/sgl/triton -xzf "$SGL/tritoncache.tar.gz"
fi
# the slim bundle drops flashinfer's JIT sources: sgl_kernel's own compiled ops instead
sed -i 's/^    _has_flashinfer = True/    _has_flashinfer = False/' /tmp/sgl/site/sgl_kernel/elementwise.py \
  /tmp/sgl/site/sgl_kernel/sampling.py
# sglang 0.5.23 builds every Qwen2/Qwen3 MLP with a DualGemm that imports its kernel module (cutlass-dsl, not in
# the slim bundle) before asking whether the GPU is an SM100, which alone can run it: ask first (an H200 is not)
DG=/tmp/sgl/site/sglang/srt/layers/dual_gemm.py
if [ -f $DG ] && ! grep -q "not is_sm100_supported()" $DG; then
  sed -i 's/^        from sglang.kernels.ops.gemm.cutedsl_dual_gemm import ($/        from sglang.srt.utils import is_sm100_supported\n        if not is_sm100_supported():\n            return None\n&/' $DG
fi
# ... and rehearses DFLASH's non-greedy verify at startup with a JIT kernel built on flashinfer's headers (dropped
# from the slim bundle): take SGLang's own fallback for builds without that kernel (non-greedy rows verified by
# greedy argmax, with a warning; the tier's requests are greedy)
sed -i 's/^_DFLASH_SAMPLING_VERIFY_AVAILABLE = ($/_DFLASH_SAMPLING_VERIFY_AVAILABLE = False and (/' \
  /tmp/sgl/site/sglang/srt/speculative/dflash_utils.py
# (the same for the draft's candidate top-k: torch.topk, SGLang's fallback without flashinfer)
sed -i 's/^    from flashinfer import top_k as _flashinfer_top_k$/    raise ImportError("no flashinfer JIT sources here")/' \
  /tmp/sgl/site/sglang/srt/models/dflash.py
if [ ! -d /tmp/tiny/target ]; then   # ddtune's own builder: target/, draft-agree/, draft-random/
  PYTHONPATH=/tmp/sgl/site python3 "$REPO/backends/selftest/tinymodels/build_tiny.py" --out /tmp/tiny | tail -1
fi
for mode in agree random; do
  mkdir -p /tmp/t_$mode; ln -sfn /tmp/tiny/target /tmp/t_$mode/target; ln -sfn /tmp/tiny/draft-$mode /tmp/t_$mode/draft
done
[ -d /tmp/ddsite/textual ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --target /tmp/ddsite "$SGL"/whl/*.whl || exit 2
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
LIBP=""
if [ ! -e "$CUDA_HOME/lib64/libcudart.so" ]; then
  mkdir -p /tmp/sgl/lib; LIBP=/tmp/sgl/lib
  CU=$(python3 -c "import nvidia.cu13, os; print(os.path.dirname(nvidia.cu13.__file__))")/lib
  ln -sf "$CU/libcudart.so.13" /tmp/sgl/lib/libcudart.so
fi
command -v c++ >/dev/null || { mkdir -p /tmp/sgl/bin; ln -sf "$(command -v g++)" /tmp/sgl/bin/c++; }
export PYTHONPATH=/tmp/ddsite:$REPO:/tmp/sgl/site:$SGL/dsstub PYTHONUNBUFFERED=1
export DDTUNE_STATE_DIR=/tmp/dd/state XDG_CONFIG_HOME=/tmp/dd/cfg XDG_CACHE_HOME=/tmp/dd/cache
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1
log "tier"
# SGLANG_SKIP_SGL_KERNEL_VERSION_CHECK: 0.5.19+ Python on sglang-kernel 0.4.5 (the kernel that loads on the
# image's torch 2.11); harmless on 0.5.17, which ships that kernel. SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND=python:
# 0.5.23's default radix tree core is a Rust extension built against torch 2.14, whose dtype numbers differ from
# 2.11's (the fourth run on the H200 panicked at the first cache insert: "UnknownKind(29)"); python is SGLang's own
# other core (0.5.19's default); 0.5.17 reads no such variable
python3 "$REPO/benchmarks/real_sglang.py" --python "$(command -v python3)" --agree /tmp/t_agree \
  --random /tmp/t_random --out "$OUT" --env PYTHONPATH=/tmp/sgl/site:$SGL/dsstub --env PATH=/tmp/sgl/bin:$PATH \
  --env CUDA_HOME="$CUDA_HOME" --env LIBRARY_PATH="$LIBP" --env TVM_FFI_CACHE_DIR=/tmp/sgl/tvmffi \
  --env TRITON_CACHE_DIR=/tmp/sgl/triton --env SGLANG_IS_FLASHINFER_AVAILABLE=false --env HF_HUB_OFFLINE=1 \
  --env TRANSFORMERS_OFFLINE=1 --env NCCL_NVLS_ENABLE=0 --env TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  --env NVSHMEM_DISABLE_NVLS=1 --env SGLANG_SKIP_SGL_KERNEL_VERSION_CHECK=1 \
  --env SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND=python "$@" -- \
  --attention-backend triton --sampling-backend pytorch --grammar-backend none --mem-fraction-static 0.1 \
  --max-total-tokens 262144 --mm-feature-transport cpu --decode-log-interval 10 --disable-prefill-cuda-graph \
  --cuda-graph-max-bs-decode 8
rc=$?
log "tier exit $rc"
tar -C /tmp/sgl/tvmffi -czf "$OUT/jitcache.tar.gz" . 2>/dev/null
tar -C /tmp/sgl/triton -czf "$OUT/tritoncache.tar.gz" . 2>/dev/null
exit $rc
