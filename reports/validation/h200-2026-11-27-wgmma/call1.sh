#!/usr/bin/env bash
# One device call (2026-11-27; it ran on an H200, no H100 was free): the first run of the wgmma kernel (Hopper's warpgroup
# instructions) and of the flash kernel after its rows' code moved to flash_rows.cuh. Each step
# under its own time limit, its log packed into $OUT/results.tar.gz after it:
#   wgmma-tests    the wgmma kernel against dense attention (ring, all-gather, Ulysses; 16 layout
#                  x mask cases; every compiled shape; rows whose maxima jump) and against flash
#   flash-tests    CudaKernel.* and the ring's 16 cases on the flash kernel
#   bench          flash and wgmma (if its tests passed) against SDPA (cuDNN) and SDPA's
#                  FlashAttention-2 backend, n = 8k-32k, causal and unmasked
#   compare-flash  the default GPU matrix on flash, checks on (refits the h100 profile)
#   compare-wgmma  the same on wgmma, fitted from the flash profile (if its tests passed)
# Run from the repository root with the bundle of scripts/gpu-bundle.sh in build-gpurt/.
set -uo pipefail
t0=$SECONDS
B=build-gpurt
R=${OUT:-/tmp}/r
mkdir -p "$R"
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$PWD/$B/lib:$nccl_dir:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export STRIPESIM_CONFIG_DIR=$PWD/configs
pack() { tar -czf "${OUT:-/tmp}/results.tar.gz" -C "$R" . ; }
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  local t=$SECONDS
  echo "== $name: $*" | tee "$R/$name.log"
  timeout -k 5 "$limit" "$@" >>"$R/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t)) s (at $((SECONDS - t0)) s)" | tee -a "$R/$name.log"
  tail -4 "$R/$name.log"
  pack
  return $rc
}
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; } > "$R/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__)' >> "$R/gpu.txt" 2>&1
tail -3 "$R/gpu.txt"
T=$B/tests/stripesim_validate_gpu_tests
S=$B/cli/stripesim
wgmma_ok=0
step wgmma-tests 75 "$T" --gtest_filter='CudaKernel.Wgmma*:*CudaWgmmaMatchesDense*' && wgmma_ok=1
step flash-tests 75 "$T" --gtest_filter='CudaKernel.*:*CudaRingMatchesDense*-CudaKernel.Wgmma*'
kernels=flash; [[ $wgmma_ok == 1 ]] && kernels=flash,wgmma
step bench 110 env KERNELS=$kernels BACKWARD_KERNELS= BENCH_ARGS="--seq-lens 8192,16384,32768 --reps 10 --warmup 3" \
  scripts/gpu-kernel-bench.sh "$B"
cp reports/validation/kernel-*.json reports/validation/kernel-*.md "$R"/ 2>/dev/null; pack
step compare-flash 120 "$S" validate --backend cuda --compare --out-dir "$R/cuda-flash"
[[ $wgmma_ok == 1 ]] && step compare-wgmma 120 "$S" validate --backend cuda --gpu-kernel wgmma --kernel stripesim-flash \
  --compare --out-dir "$R/cuda-wgmma"
pack
echo "all done at $((SECONDS - t0)) s"
