#!/usr/bin/env bash
# The one device call of 2026-11-27 on one H100: every step under its own time limit, its log and
# output folder packed into $OUT/results.tar.gz after each step so that a step cut short still
# leaves what the steps before it measured. Run from the repository root with the build carried in
# build-gpurt/ (cli/, tests/, bench/ and lib/: libfmt and OpenMPI's shared libraries).
set -uo pipefail
B=build-gpurt
R=/tmp/r
mkdir -p "$R"
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$PWD/$B/lib:$nccl_dir:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export STRIPESIM_CONFIG_DIR=$PWD/configs
pack() { tar -czf "${OUT:-/tmp}/results.tar.gz" -C "$R" . ; }
step() {  # step NAME SECONDS COMMAND...: runs it under timeout, logs to $R/NAME.log with its exit status
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "== $name: $*" | tee "$R/$name.log"
  timeout -k 5 "$limit" "$@" >>"$R/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$R/$name.log"
  tail -4 "$R/$name.log"
  pack
}
nvidia-smi > "$R/gpu.txt" 2>&1; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$R/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__)' >> "$R/gpu.txt" 2>&1
cat "$R/gpu.txt" | tail -3
T=$B/tests/stripesim_validate_gpu_tests
S=$B/cli/stripesim
# 1. what never ran on a GPU: the tensor-core backward, the collectives on the cuda backend
step tests-new 140 $T --gtest_filter='CudaBackward.*:*CudaBackwardMatchesDense*:*CudaCollectivesMatchDense*:CudaBackend.*:CudaKernel.*'
# 2. the kernels against PyTorch SDPA at n = 8k-32k (writes reports/validation/kernel-<gpu>.{json,md})
step bench 80 env KERNELS=flash BACKWARD_KERNELS=wmma BENCH_ARGS="--seq-lens 8192,16384,32768 --reps 10 --warmup 3" scripts/gpu-kernel-bench.sh $B
cp reports/validation/kernel-*.json reports/validation/kernel-*.md "$R"/ 2>/dev/null; pack
# 3. the default GPU matrix, checks on (target: under 3 minutes on one H100)
step compare 170 $S validate --backend cuda --compare --out-dir "$R/cuda"
# 4. forward + backward on the tensor-core backward
step fwdbwd 200 $S validate --backend cuda --pass fwdbwd --gpu-backward-kernel wmma --compare --seq-len 8k --iterations 3 --out-dir "$R/cuda-fwdbwd-wmma"
# 5. ring, all-gather and Ulysses side by side
step cp 170 $S validate --backend cuda --cp ring,allgather,ulysses --compare --seq-len 16k --out-dir "$R/cuda-cp"
# 6. every other GPU test (ran on an H200 on 2026-11-25)
step tests-rest 40 $T --gtest_filter='-CudaBackward.*:*CudaBackwardMatchesDense*:*CudaCollectivesMatchDense*:CudaBackend.*:CudaKernel.*:*Nccl*'
echo "== all steps done after $SECONDS s"
