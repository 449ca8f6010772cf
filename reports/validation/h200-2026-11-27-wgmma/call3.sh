#!/usr/bin/env bash
# Call 3 (2026-11-27): the swizzled wgmma kernel ("sw", call 2) against "v2", the same with its
# descriptors built once (a step adds a constant) and its copies unrolled at addresses that
# advance by constants (call 2's Nsight Compute: 1,800 instructions a warp per 64x128 tile, the
# ALU pipe busiest). v2 checked (19 wgmma tests), both timed twice, interleaved; SASS of both at
# 64x128 for the next look; the faster one that passed then runs the kernel bench against SDPA
# and FlashAttention-2 (flash and wgmma) and the default GPU matrix. Run from the repository root
# with gpu-variants/payload.tar.xz (sw/, v2/ binaries; lib/ the libraries of scripts/gpu-bundle.sh).
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
timeout -k 5 75 $P/v2/stripesim_validate_gpu_tests --gtest_filter='CudaKernel.Wgmma*:*CudaWgmmaMatchesDense*' > "$R/v2-tests.log" 2>&1
v2_rc=$?; echo "v2 tests rc $v2_rc at $((SECONDS - t0)) s"; tail -3 "$R/v2-tests.log"; pack
for round in 1 2; do
  for v in sw v2; do
    timeout 60 $P/$v/bench_kernel_gpu --kernels wgmma --tiles 128x128,64x128,64x64 --seq-lens 8192,16384,32768 --reps 10 --warmup 3 \
      | sed "s/^/$v $round /" >> "$R/variants.txt" 2>&1
  done
done
echo "timed at $((SECONDS - t0)) s"; pack
best=$(python3 - "$R/variants.txt" "$v2_rc" <<'PY'
import json, math, sys, collections
best = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    v, rnd, rest = line.split(" ", 2)
    if not rest.startswith("{"): continue
    d = json.loads(rest); key = (d["mask"], d["seq_len"], d["tile"])
    best[v][key] = max(best[v].get(key, 0), d["tflops"])
for key in sorted(best["sw"]):
    print(key, " ".join(f"{v}={best[v].get(key, 0):.1f}" for v in ("sw", "v2")), file=sys.stderr)
def score(v):  # geometric mean over (mask, n) of the best tile
    top = collections.defaultdict(float)
    for (mask, n, tile), t in best[v].items(): top[(mask, n)] = max(top[(mask, n)], t)
    return math.exp(sum(math.log(t) for t in top.values()) / len(top)) if top else 0
ok = ["sw"] + (["v2"] if sys.argv[2] == "0" else [])
print(max(ok, key=score))
PY
)
echo "best: $best" | tee "$R/best.txt"
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for v in sw v2; do
  "$cuobjdump" -sass $P/$v/bench_kernel_gpu 2>/dev/null | awk '/Function : .*wgmma_attention_kernelI13__nv_bfloat16Li128ELi64ELi128E/{f=1} f{print} f && /\.\.\.\.\.\.\.\.\.\./{exit}' > "$R/sass-$v-64x128.txt"
  echo "sass $v: $(wc -l < "$R/sass-$v-64x128.txt") lines"
done
pack
mkdir -p /tmp/bundle/bench /tmp/bundle/cli
cp $P/$best/bench_kernel_gpu /tmp/bundle/bench/; cp $P/$best/stripesim /tmp/bundle/cli/; ln -sfn $P/lib /tmp/bundle/lib
timeout -k 5 90 env KERNELS=flash,wgmma BACKWARD_KERNELS= BENCH_ARGS="--seq-lens 8192,16384,32768 --reps 10 --warmup 3" \
  scripts/gpu-kernel-bench.sh /tmp/bundle > "$R/bench.log" 2>&1
echo "bench rc $? at $((SECONDS - t0)) s"; cp reports/validation/kernel-*.json reports/validation/kernel-*.md "$R"/ 2>/dev/null; pack
timeout -k 5 110 /tmp/bundle/cli/stripesim validate --backend cuda --gpu-kernel wgmma --kernel stripesim-flash --compare \
  --out-dir "$R/cuda-wgmma" > "$R/compare-wgmma.log" 2>&1
echo "compare rc $? at $((SECONDS - t0)) s"; tail -2 "$R/compare-wgmma.log"
pack
echo "all done at $((SECONDS - t0)) s"
