#!/usr/bin/env bash
# Times the validator's attention kernel (bench_kernel_gpu, plain attention on one GPU) and
# PyTorch's scaled_dot_product_attention on the same shapes (its default backend, and its
# FlashAttention-2 backend where the GPU has it), and writes reports/validation/kernel-<gpu>.json
# and .md side by side with the ratios.
#   scripts/gpu-kernel-bench.sh [BUILD_DIR]     (default: build; needs bench_kernel_gpu built)
# Environment: PYTHON (a Python with torch; default python3), BENCH_ARGS (extra flags for both
# programs, e.g. "--seq-lens 4096,8192"), KERNELS (stripesim's forward kernels to time; default
# flash,wmma), BACKWARD_KERNELS (its backward kernels, timed alone after a forward beside SDPA's
# backward; default wmma, empty for none; scalar takes minutes at 32k). On a machine whose NCCL
# comes from PyTorch's pip packages (no libnccl.so.2 beside the CUDA toolkit), that directory is
# put on LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
python="${PYTHON:-python3}"
bench="$build/bench/bench_kernel_gpu"
[[ -x "$bench" ]] || { echo "gpu-kernel-bench.sh: $bench not found (configure with CUDA and build it)" >&2; exit 1; }

if nccl_dir=$("$python" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null); then
  export LD_LIBRARY_PATH="$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
backward="${BACKWARD_KERNELS-wmma}"
ours_cmd="$bench --kernels ${KERNELS:-flash,wmma}${backward:+ --backward-kernels $backward} ${BENCH_ARGS:-}"
sdpa_cmd="$python bench/sdpa_reference.py${backward:+ --passes fwd,bwd} ${BENCH_ARGS:-}"
fa2_cmd="$python bench/sdpa_reference.py --sdpa-backend flash${backward:+ --passes fwd,bwd} ${BENCH_ARGS:-}"
echo "== $ours_cmd" >&2
$ours_cmd > "$work/stripesim.jsonl"
echo "== $sdpa_cmd" >&2
$sdpa_cmd > "$work/sdpa.jsonl"
echo "== $fa2_cmd" >&2
fa2=()
if $fa2_cmd > "$work/fa2.jsonl" && grep -q '^{' "$work/fa2.jsonl"; then
  fa2=(--flash-jsonl "$work/fa2.jsonl")
else
  echo "gpu-kernel-bench.sh: SDPA's FlashAttention-2 backend did not run here; the report compares with SDPA alone" >&2
  fa2_cmd=""
fi
"$python" bench/kernel_report.py "${fa2[@]}" "$work/stripesim.jsonl" "$work/sdpa.jsonl" reports/validation "$ours_cmd" "$sdpa_cmd" ${fa2_cmd:+"$fa2_cmd"}
