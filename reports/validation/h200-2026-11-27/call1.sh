#!/usr/bin/env bash
# Call 1 of 2026-11-27 on one H200: which flash-kernel variant is fastest, why (ncu, SASS), its
# GPU tests, the default GPU matrix, and the lone 64x64 calls. Run from the repository root.
set -uo pipefail
t0=$SECONDS
tar -xJf gpu-variants/payload.tar.xz -C gpu-variants   # bench-c0..c2 and build-gpurt (c3)
mv gpu-variants/build-gpurt .
cp build-gpurt/bench/bench_kernel_gpu gpu-variants/bench-c3
R=$OUT/r; mkdir -p "$R"
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$PWD/build-gpurt/lib:$nccl_dir:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export STRIPESIM_CONFIG_DIR=$PWD/configs
pack() { tar -czf "$OUT/results.tar.gz" -C "$R" . ; }
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$R/gpu.txt" 2>&1
tail -3 "$R/gpu.txt"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# 1. the four variants, twice each, interleaved (c0: HEAD; c1: 32-bit shared addresses; c2: c1
#    with the sub-tile loop not unrolled; c3: c1 + key positions staged in shared memory)
for round in 1 2; do
  for c in c0 c1 c2 c3; do
    timeout 60 gpu-variants/bench-$c --kernels flash --tiles 128x128,128x64 --seq-lens 8192,16384,32768 --reps 10 --warmup 3 \
      | sed "s/^/$c $round /" >> "$R/variants.txt" 2>&1
  done
done
echo "variants done at $((SECONDS - t0)) s"; pack
# 2. PyTorch on the same shapes: SDPA auto (cuDNN) and its FlashAttention-2 backend
for b in auto flash; do
  timeout 90 python3 bench/sdpa_reference.py --sdpa-backend $b --seq-lens 8192,16384,32768 --reps 10 --warmup 3 \
    | sed "s/^/sdpa-$b /" >> "$R/sdpa.txt" 2>&1
done
echo "sdpa done at $((SECONDS - t0)) s"; pack
# 3. SASS of the 128x128 bf16 variant (c3 and c0): where the spills are
for c in c0 c3; do
  cuobjdump -sass -fun '_ZN9stripesim8validate3gpu22flash_attention_kernelI13__nv_bfloat16Li128ELi128ELi128EEEvNS1_18BlockAttentionArgsE' \
    gpu-variants/bench-$c > "$R/sass-$c-128x128.txt" 2>&1
done
pack
# 4. Nsight Compute on the c3 kernel, 16k unmasked, 128x128
timeout 120 "$ncu" --clock-control none --set full --kernel-name regex:flash_attention_kernel --launch-count 1 -o "$R/flash-16k-bidirectional" \
  gpu-variants/bench-c3 --kernels flash --tiles 128x128 --masks bidirectional --seq-lens 16384 --reps 1 --warmup 0 > "$R/ncu.log" 2>&1
[[ -f "$R/flash-16k-bidirectional.ncu-rep" ]] && "$ncu" --import "$R/flash-16k-bidirectional.ncu-rep" --page details > "$R/ncu-details.txt" 2>&1
rm -f "$R/flash-16k-bidirectional.ncu-rep"
echo "ncu done at $((SECONDS - t0)) s"; pack
# 5. the GPU tests (c3) and the default GPU matrix, then the lone 64x64 calls
OUT= STEPS="tests compare lone64" timeout 330 scripts/gpu-session.sh build-gpurt
mkdir -p "$R/session"; cp -r /tmp/gpu-session/. "$R/session" 2>/dev/null
rm -f "$R"/session/*.ncu-rep
pack
echo "all done at $((SECONDS - t0)) s"
