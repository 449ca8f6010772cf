#!/usr/bin/env bash
# One device call on an H100 (2026-11-27, second lease of the day). Run from the repository root
# with gpu-variants/payload.tar.xz (build-gpurt/ of scripts/gpu-bundle.sh, at commit 46adfeb).
# 1. PyTorch SDPA (cuDNN) timed the way ring-flash-attention calls it, every distinct call once
#    per layout in interleaved passes (bench/measure_kernels.py), with the SM clock, power and
#    throttle reasons sampled every 100 ms: does the shared causal-fwd-n65536-N4 file's striped
#    call (1977 us against 1811 us for the same call in contiguous) reproduce, and does the
#    backward's cost per tile grow with the call's length (8 % more at 16k tokens per device than
#    at 8k in the shared files), and if so, with the clock or without it (32k per device added)?
# 2. scripts/gpu-session.sh's wgmma step (its GPU tests, the default matrix on it, fitted from the
#    H100 stripesim-flash profile: cuda-wgmma/kernel.json is the H100 stripesim-wgmma profile),
#    compare (the default matrix on flash: refits the H100 stripesim-flash profile, still fitted on
#    the kernel before 2026-11-27) and bench (flash and wgmma against SDPA on an H100). It packs its
#    own archive in /tmp, unpacked into r/session/ at the end.
set -uo pipefail
t0=$SECONDS
tar -xJf gpu-variants/payload.tar.xz
R=${OUT:-/tmp}/r; mkdir -p "$R/sdpa"
pack() { tar -czf "${OUT:-/tmp}/results.tar.gz" -C "$R" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$R/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, torch.backends.cudnn.version())' >> "$R/gpu.txt" 2>&1
cat "$R/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,nounits -lms 100 > "$R/sdpa/clocks.csv" 2>&1 &
mon=$!
m() {  # m PASS SEQ_LEN DEVICES
  echo "$(date +%T.%N | cut -c1-12) start $1 $2 $3" >> "$R/sdpa/marks.txt"
  (cd bench && timeout -k 5 100 python3 measure_kernels.py --kernel sdpa --sdpa-backend auto --pass "$1" --seq-len "$2" \
     --devices "$3" --passes 3 --out "$R/sdpa/causal-$1-n$2-N$3.json") > "$R/sdpa/causal-$1-n$2-N$3.log" 2>&1
  echo "$(date +%T.%N | cut -c1-12) end $1 $2 $3 rc $?" >> "$R/sdpa/marks.txt"
  echo "sdpa $1 $2 $3 done at $((SECONDS - t0)) s"; pack
}
m fwd 65536 4; m fwdbwd 32768 4; m fwdbwd 65536 4; m fwd 131072 4; m fwdbwd 131072 4
kill $mon; pack
OUT= STEPS="wgmma compare bench" timeout -k 5 $((540 - (SECONDS - t0))) scripts/gpu-session.sh build-gpurt
mkdir -p "$R/session"; tar -xzf /tmp/gpu-session.tar.gz -C "$R/session" 2>/dev/null; pack
echo "all done at $((SECONDS - t0)) s"
