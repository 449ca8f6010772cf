#!/usr/bin/env bash
# Second device call on an H100 (2026-11-27): one attention call, no ring, at 1 to 32 heads of 128
# (the shape of Ulysses' calls: the whole sequence on H/U heads), PyTorch SDPA's FlashAttention-2
# (backend flash) and cuDNN (backend auto), forward and backward, causal and unmasked, at 8k and
# 32k tokens (128k at 1, 2 and 4 heads), for the h100 fa2 and sdpa profiles' predictions of
# few-headed long calls. Run from the repository root; JSON lines into $OUT/heads.jsonl.
set -uo pipefail
t0=$SECONDS
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$O/gpu2.txt" 2>&1
for backend in flash auto; do
  for h in 1 2 4 8 16 32; do
    lens=8192,32768; [[ $h -le 4 ]] && lens=8192,32768,131072
    timeout -k 5 60 python3 bench/sdpa_reference.py --sdpa-backend $backend --heads $h --seq-lens $lens \
      --masks causal,bidirectional --passes fwd,bwd --reps 10 --warmup 3 >> "$O/heads.jsonl" 2>> "$O/heads.err"
    echo "$backend heads $h rc $? at $((SECONDS - t0)) s"
  done
done
