#!/usr/bin/env bash
# Third device call on an H100 (2026-11-27): ring-flash-attention's earlier benchmark shape, 5
# heads of 128 at 8k tokens per GPU over 8 GPUs (n = 64k), as one GPU plays the ring with
# PyTorch's FlashAttention-2 (bench/measure_kernels.py), forward and forward+backward: the shape
# whose published layout speedups the fa2 profile's placement decides, timed and held out.
set -uo pipefail
O=${OUT:-/tmp}
cd bench
for p in fwd fwdbwd; do
  timeout -k 5 80 python3 measure_kernels.py --kernel sdpa --sdpa-backend flash --pass $p --seq-len 65536 --devices 8 \
    --heads 5 --passes 3 --out "$O/causal-$p-n65536-N8-h5.json" > "$O/h5-$p.log" 2>&1
  echo "$p rc $? at $SECONDS s"
done
