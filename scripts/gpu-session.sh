#!/usr/bin/env bash
# The GPU checks a one-GPU session runs, each under its own time limit, its log and output folder
# packed into $OUT/results.tar.gz (or /tmp/gpu-session.tar.gz) after every step, so a step cut
# short still leaves what the steps before it measured. Run from the repository root:
#   STEPS="ncu bench fwdbwd16k head64 wgmma" scripts/gpu-session.sh [BUNDLE_DIR]   (default build-gpurt)
# with the bundle of scripts/gpu-bundle.sh. Steps (default: those five, about 12 minutes on an
# H100 with their limits; wgmma only on a Hopper GPU; nccl only where 2 GPUs or more are visible):
#   tests      every GPU test but NCCL's                                     (~130 s)
#   nccl       (2 GPUs or more) NCCL's GPU tests, then the nccl backend's ring, all-gather and
#              Ulysses at n = 16k on as many GPUs as it sees, up to 8 (issue 20's measured side)
#   ncu        Nsight Compute on one flash forward call, n = 16k, unmasked   (why it runs at
#              0.46-0.50x of SDPA: issue stalls, shared-memory bank conflicts, achieved occupancy)
#   bench      the kernels against PyTorch SDPA at n = 8k-32k (reports/validation/kernel-<gpu>.*);
#              the wgmma kernel beside flash on a Hopper GPU
#   compare    the default GPU matrix, checks on (target: under 3 minutes)
#   fwdbwd16k  forward + the tensor-core backward at n = 16k, predicted against measured
#   head64     the default matrix at head size 64
#   cp         ring, all-gather and Ulysses side by side at n = 16k
#   wgmma      the wgmma kernel (Hopper only): its GPU tests, then the default GPU matrix on it,
#              fitted from the card's stripesim-flash profile where it has no stripesim-wgmma one
#              (cuda-wgmma/kernel.json is then that card's profile to ship)            (~150 s)
#   lone64     the 64x64 flash call over a whole 16k sequence at 1, 2, 4, 8 and 16 heads, causal
#              and unmasked (the shape of Ulysses' calls, predicted 9-11 % short at 2 and 4 heads),
#              each printed beside the h100 stripesim-flash profile's prediction, plus Nsight
#              Compute on the 2-head causal call: how fast a lone 2-warp block runs     (~100 s)
#   retime     PyTorch flex_attention timed again on the eleven shared H100 flex workloads (the ones
#              configs/kernels/h100/flex.json is fitted on), in 3 interleaved passes over every call
#              (bench/retime_measurements.py), the worst-scored ones first, then scored: the shipped
#              profile on them (--no-fit) and each left out of a fit in turn. Settles whether the
#              cells that set issue 12's worst speedup errors (a window call at twice the time of
#              equal work, a documents call likewise) are the kernel or one slow stretch (~6-8 min)
#   unseen     flex_attention on the five workloads of configs/measurements/h200/flex-heldout (8
#              devices, windows of 2048, 8192 and 16384 tokens, forward+backward at 64k x 8), which
#              no shipped file has: to score a profile fitted on the retimed files   (~2-3 min)
#   prefix     flex_attention under prefix-LM masks (prefix:8192 at 32k x 4, prefix:16384 at 64k x 8,
#              forward; configs/measurements/h200/flex-prefix holds an H200's), scored with the
#              shipped flex profile of the card (h100 or h200, --no-fit)   (~1 min warm; a cold
#              machine's first torch.compile takes minutes: on 2026-11-29 three 64k workloads did
#              not finish in 200 s there, and these two took 23 s and 30 s once warm)
#   hostsync   bench/host_sync_cost.py on ring-flash-attention's benchmark packings (8 devices, 64k
#              tokens, Llama-3.1 8B's heads): the GPU idle time per round that the varlen zigzag's
#              host-built masks cost, against the 201-278 us a forward round the published ratios
#              leave unexplained (README, "Predicted against published measurements")     (~30 s)
set -uo pipefail
cd "$(dirname "$0")/.."
B="${1:-build-gpurt}"
R=/tmp/gpu-session
rm -rf "$R"
mkdir -p "$R"
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$PWD/$B/lib:$nccl_dir:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export STRIPESIM_CONFIG_DIR=$PWD/configs
archive="${OUT:+$OUT/results.tar.gz}"
archive="${archive:-/tmp/gpu-session.tar.gz}"
pack() { tar -czf "$archive" -C "$R" . ; }
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
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; } > "$R/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__)' >> "$R/gpu.txt" 2>&1
tail -3 "$R/gpu.txt"
T=$B/tests/stripesim_validate_gpu_tests
S=$B/cli/stripesim
K=$B/bench/bench_kernel_gpu
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
hopper=0
[[ "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)" == 9.0 ]] && hopper=1
for s in ${STEPS:-ncu bench fwdbwd16k head64 wgmma}; do
  case "$s" in
    tests) step tests 200 "$T" --gtest_filter='-*Nccl*' ;;
    nccl) gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
          if (( gpus >= 2 )); then
            sizes=2; (( gpus >= 4 )) && sizes=2,4; (( gpus >= 8 )) && sizes=2,4,8
            step nccl-tests 300 "$T" --gtest_filter='*Nccl*'
            step nccl 400 "$S" validate --backend nccl --cp ring,allgather,ulysses --compare --seq-len 16k \
              --devices "$sizes" --out-dir "$R/nccl-cp"
          else
            echo "== nccl: skipped, $gpus GPU visible (a ring needs 2)" | tee "$R/nccl.log"
          fi ;;
    ncu) step ncu 150 "$ncu" --clock-control none --set full --kernel-name regex:flash_attention_kernel --launch-count 1 -o "$R/flash-16k-bidirectional" \
           "$K" --kernels flash --tiles 128x128 --masks bidirectional --seq-lens 16384 --reps 1 --warmup 0
         [[ -f "$R/flash-16k-bidirectional.ncu-rep" ]] && "$ncu" --import "$R/flash-16k-bidirectional.ncu-rep" --page details > "$R/ncu-details.txt" 2>&1
         pack ;;
    bench) step bench 120 env KERNELS=flash$([[ $hopper == 1 ]] && echo ,wgmma) BACKWARD_KERNELS=wmma BENCH_ARGS="--seq-lens 8192,16384,32768 --reps 10 --warmup 3" \
             scripts/gpu-kernel-bench.sh "$B"
           cp reports/validation/kernel-*.json reports/validation/kernel-*.md "$R"/ 2>/dev/null; pack ;;
    compare) step compare 200 "$S" validate --backend cuda --compare --out-dir "$R/cuda" ;;
    fwdbwd16k) step fwdbwd16k 280 "$S" validate --backend cuda --pass fwdbwd --gpu-backward-kernel wmma --compare --seq-len 16k \
                 --iterations 3 --out-dir "$R/cuda-fwdbwd-wmma-16k" ;;
    head64) step head64 150 "$S" validate --backend cuda --compare --head-dim 64 --out-dir "$R/cuda-head64" ;;
    cp) step cp 200 "$S" validate --backend cuda --cp ring,allgather,ulysses --compare --seq-len 16k --out-dir "$R/cuda-cp" ;;
    wgmma) if [[ $hopper == 1 ]]; then
             step wgmma-tests 90 "$T" --gtest_filter='CudaKernel.Wgmma*:*CudaWgmmaMatchesDense*'
             step wgmma 150 "$S" validate --backend cuda --gpu-kernel wgmma --compare --out-dir "$R/cuda-wgmma"
           else
             echo "== wgmma: skipped, not a Hopper GPU (compute capability 9.0)" | tee "$R/wgmma.log"
           fi ;;
    lone64) step lone64 150 bash -c '
        K=$1 S=$2 R=$3
        for h in 1 2 4 8 16; do
          "$K" --kernels flash --tiles 64x64 --masks causal,bidirectional --seq-lens 16384 --heads "$h" --reps 10 --warmup 3
          for m in causal bidirectional; do
            echo "predicted (h100 stripesim-flash) heads $h $m: $("$S" simulate --hardware h100 --kernel stripesim-flash \
              --tile 64x64 -n 16k -N 1 --heads "$h" --mask "$m" --layouts contiguous --topology ideal --sync lockstep \
              --format csv | tail -1 | cut -d, -f11) us"
          done
        done' lone64 "$K" "$S" "$R"
            step ncu64 120 "$ncu" --clock-control none --set full --kernel-name regex:flash_attention_kernel --launch-count 1 -o "$R/flash64-16k-causal-2heads" \
              "$K" --kernels flash --tiles 64x64 --masks causal --seq-lens 16384 --heads 2 --reps 1 --warmup 0
            [[ -f "$R/flash64-16k-causal-2heads.ncu-rep" ]] && "$ncu" --import "$R/flash64-16k-causal-2heads.ncu-rep" --page details > "$R/ncu64-details.txt" 2>&1
            pack ;;
    retime) F=configs/measurements/h100/flex
            mkdir -p "$R/retimed-flex"
            step retime 480 python3 bench/retime_measurements.py --out-dir "$R/retimed-flex" \
              $F/window4096-fwd-n65536-N4.json $F/documents-seed3-fwd-n65536-N4.json $F/window4096-fwd-n32768-N4.json \
              $F/documents-seed3-fwd-n32768-N4.json $F/causal-fwd-n32768-N2.json $F/causal-fwdbwd-n32768-N4.json \
              $F/causal-fwd-n16384-N2.json $F/causal-fwd-n32768-N4.json $F/causal-fwd-n65536-N4.json \
              $F/causal-fwdbwd-n32768-N2.json $F/causal-fwdbwd-n65536-N4.json
            retimed=("$R"/retimed-flex/*.json)
            # Scored here only on an H100 with the bundle carried (the files are that card's); elsewhere
            # the retimed files come back to be scored on any machine (README, "How accurate is it").
            if [[ -f "${retimed[0]}" && -x "$S" && "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" == *H100* ]]; then
              step retime-shipped 60 "$S" validate --compare --no-fit --hardware h100 --kernel flex \
                --measurements "${retimed[@]}" --out-dir "$R/retimed-flex-shipped"
              step retime-loo 120 "$S" validate --compare --hardware h100 --kernel flex --measurements "${retimed[@]}" \
                --block-costs $(dirname $F)/block-costs-sdpa-flex.json --block-costs-kernel flex --out-dir "$R/retimed-flex-loo"
            fi ;;
    hostsync) step hostsync 120 bash -c '
        for packing in 2048,59136,4352 32768,32768 24832,25600,12800,1280,1024 65536; do
          python3 bench/host_sync_cost.py --devices 8 --documents "$packing" --heads 32 --kv-heads 8 \
            --out "$1/hostsync-${packing//,/-}.json" || exit 1
        done' hostsync "$R" ;;
    unseen) mkdir -p "$R/unseen-flex"
            # Each workload in its own process, as configs/measurements/h200/flex-heldout was timed.
            step unseen 300 bash -c '
        for w in "causal fwd 65536 8" "window:8192 fwd 65536 8" "causal fwdbwd 65536 8" "window:2048 fwd 32768 8" \
                 "window:16384 fwd 65536 4"; do
          set -- $w
          python3 bench/measure_kernels.py --kernel flex --seq-len "$3" --devices "$4" --heads 16 --kv-heads 16 --head-dim 128 \
            --mask "$1" --pass "$2" --tile 128x128 --passes 3 --out "$0/${1/:/}-$2-n$3-N$4.json" || exit 1
        done' "$R/unseen-flex" ;;
    prefix) mkdir -p "$R/prefix-flex"
            step prefix 400 bash -c '
        for w in "prefix:8192 32768 4" "prefix:16384 65536 8"; do
          set -- $w
          python3 bench/measure_kernels.py --kernel flex --seq-len "$2" --devices "$3" --heads 16 --kv-heads 16 --head-dim 128 \
            --mask "$1" --pass fwd --tile 128x128 --passes 3 --out "$0/${1/:/}-fwd-n$2-N$3.json" || exit 1
        done' "$R/prefix-flex"
            card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
            hw=$([[ $card == *H200* ]] && echo h200 || echo h100)
            measured=("$R"/prefix-flex/*.json)
            if [[ -f "${measured[0]}" && -x "$S" ]]; then
              step prefix-shipped 60 "$S" validate --compare --no-fit --hardware "$hw" --kernel flex \
                --measurements "${measured[@]}" --out-dir "$R/prefix-flex-shipped"
            fi ;;
    *) echo "gpu-session.sh: unknown step '$s' (tests, nccl, ncu, bench, compare, fwdbwd16k, head64, wgmma, cp, lone64, retime, hostsync, unseen, prefix)" >&2; exit 2 ;;
  esac
done
echo "== all steps done after $SECONDS s; results in $archive"
