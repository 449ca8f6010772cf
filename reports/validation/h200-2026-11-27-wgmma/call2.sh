#!/usr/bin/env bash
# Call 2 (2026-11-27): the wgmma kernel with its shared-memory tiles 128-byte swizzled ("sw",
# Q/K/V copied row by row) against call 1's no-swizzle core matrices ("base"): sw checked (its 19
# wgmma tests), both timed twice, interleaved; Nsight Compute on sw at 128x128 and 64x128 (16k,
# unmasked); if sw passed, the default GPU matrix on it. Run from the repository root with
# gpu-variants/payload.tar.xz (base/ and sw/ binaries, lib/ the libraries of scripts/gpu-bundle.sh).
set -uo pipefail
t0=$SECONDS
P=/tmp/pay; mkdir -p $P; tar -xJf gpu-variants/payload.tar.xz -C $P

R=${OUT:-/tmp}/r; mkdir -p "$R"
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$P/lib:$nccl_dir:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export STRIPESIM_CONFIG_DIR=$PWD/configs
pack() { tar -czf "${OUT:-/tmp}/results.tar.gz" -C "$R" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$R/gpu.txt" 2>&1
timeout -k 5 75 $P/sw/stripesim_validate_gpu_tests --gtest_filter='CudaKernel.Wgmma*:*CudaWgmmaMatchesDense*' > "$R/sw-tests.log" 2>&1
sw_rc=$?; echo "sw tests rc $sw_rc at $((SECONDS - t0)) s"; tail -3 "$R/sw-tests.log"; pack
for round in 1 2; do
  for v in base sw; do
    timeout 60 $P/$v/bench_kernel_gpu --kernels wgmma --tiles 128x128,64x128,64x64 --seq-lens 8192,16384,32768 --reps 10 --warmup 3 \
      | sed "s/^/$v $round /" >> "$R/variants.txt" 2>&1
  done
done
echo "timed at $((SECONDS - t0)) s"; pack
python3 - "$R/variants.txt" <<'PY'
import json, sys, collections
best = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    v, rnd, rest = line.split(" ", 2)
    if not rest.startswith("{"): continue
    d = json.loads(rest); key = (d["mask"], d["seq_len"], d["tile"])
    best[v][key] = max(best[v].get(key, 0), d["tflops"])
for key in sorted(best["base"]):
    print(key, " ".join(f"{v}={best[v].get(key, 0):.1f}" for v in ("base", "sw")))
PY
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for tile in 128x128 64x128; do
  timeout -k 5 80 "$ncu" --clock-control none --set full --kernel-name regex:wgmma_attention_kernel --launch-count 1 -o "$R/ncu-sw-$tile" \
    $P/sw/bench_kernel_gpu --kernels wgmma --tiles $tile --masks bidirectional --seq-lens 16384 --reps 1 --warmup 0 > "$R/ncu-sw-$tile.log" 2>&1
  [[ -f "$R/ncu-sw-$tile.ncu-rep" ]] && "$ncu" --import "$R/ncu-sw-$tile.ncu-rep" --page details > "$R/ncu-sw-$tile.txt" 2>&1
  rm -f "$R/ncu-sw-$tile.ncu-rep"
  echo "ncu $tile at $((SECONDS - t0)) s"; pack
done
if [[ $sw_rc == 0 ]]; then
  timeout -k 5 120 $P/sw/stripesim validate --backend cuda --gpu-kernel wgmma --kernel stripesim-flash --compare \
    --out-dir "$R/cuda-wgmma-sw" > "$R/compare-wgmma-sw.log" 2>&1
  echo "compare rc $? at $((SECONDS - t0)) s"; tail -3 "$R/compare-wgmma-sw.log"
fi
pack
echo "all done at $((SECONDS - t0)) s"
