#!/usr/bin/env bash
# stripesim's predictions for the settings of two published benchmarks (README "Predicted
# against published measurements"). ring-flash-attention's: 8 GPUs, Llama-3.1 8B's attention
# (and, in its earlier version, 5 heads of 128), 8k tokens per GPU, FlashAttention-2 on an A100
# and on an H100 (for the H800): each layout's or function's throughput over ring_attn
# (contiguous). USP's (long-context-attention): 8 A100s on NVLink, 128k tokens, batch 2, 8 heads
# of 128, forward: each Ulysses x ring split's throughput over pure Ulysses. Needs build/ and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
stripesim=./build/cli/stripesim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The time of one layout, in microseconds, from simulate's CSV.
time_of() {  # layout, then simulate's flags
  local layout=$1
  shift
  "$stripesim" simulate --model llama3-8b -N 8 -n 64k --format csv "$@" |
    python3 -c "import csv, sys; print([r['time_us'] for r in csv.DictReader(sys.stdin) if r['layout'] == sys.argv[1]][0])" "$layout"
}

# The four packings the varlen benchmark cycles through (its per-GPU cu_seqlens times 8).
packings=("65536" "2048,59136,4352" "32768,32768" "24832,25600,12800,1280,1024")
# ring_flash_attn_varlen_func's layout: every document cut into 8 contiguous pieces, piece d on
# device d (a permutation file per packing).
for i in "${!packings[@]}"; do
  python3 - "${packings[$i]}" "$work/pieces-$i.json" <<'EOF'
import json, sys
lengths = [int(x) for x in sys.argv[1].split(",")]
blocks, start = [[] for _ in range(8)], 0
for length in lengths:
    piece = length // 8
    for d in range(8):
        blocks[d] += range(start + d * piece, start + (d + 1) * piece)
    start += length
json.dump({"blocks": blocks}, open(sys.argv[2], "w"))
EOF
done

for hardware in a100 h100; do
  for pass in fwd fwdbwd; do
    # The benchmark's earlier version: 5 heads of 128 (every one its own K/V head).
    flags=(--hardware "$hardware" --kernel fa2 --pass "$pass" --heads 5 --kv-heads 5)
    ring=$("$stripesim" simulate -N 8 -n 64k --format csv "${flags[@]}" --layouts contiguous,zigzag,striped |
      python3 -c "import csv, sys; t = {r['layout']: float(r['time_us']) for r in csv.DictReader(sys.stdin)}; \
print(f\"$hardware {'$pass':6} 5 heads zigzag/ring {t['contiguous'] / t['zigzag']:.2f}  stripe/ring {t['contiguous'] / t['striped']:.2f}\")")
    echo "$ring"
    flags=(--hardware "$hardware" --kernel fa2 --pass "$pass")
    ring=$(time_of contiguous "${flags[@]}" --layouts contiguous)
    zigzag=$(time_of zigzag "${flags[@]}" --layouts zigzag)
    striped=$(time_of striped "${flags[@]}" --layouts striped)
    python3 - "$hardware" "$pass" "$ring" "$zigzag" "$striped" <<'EOF'
import sys
hw, p, ring, zigzag, striped = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
print(f"{hw} {p:6} batch   zigzag/ring {ring / zigzag:.2f}  stripe/ring {ring / striped:.2f}")
EOF
    # Varlen: throughput over the four packings is 4 over the sum of their times.
    sums=(0 0 0)
    for i in "${!packings[@]}"; do
      mask="documents:${packings[$i]}"
      t_ring=$(time_of "permutation:$work/pieces-$i.json" "${flags[@]}" --mask "$mask" --layouts "permutation:$work/pieces-$i.json")
      t_zigzag=$(time_of doc-zigzag "${flags[@]}" --mask "$mask" --layouts doc-zigzag)
      t_llama3=$(time_of contiguous "${flags[@]}" --mask "$mask" --layouts contiguous --cp allgather:2)
      sums=($(python3 -c "import sys; a = list(map(float, sys.argv[1:4])); b = list(map(float, sys.argv[4:])); print(*[x + y for x, y in zip(a, b)])" \
        "${sums[@]}" "$t_ring" "$t_zigzag" "$t_llama3"))
    done
    python3 - "$hardware" "$pass" "${sums[@]}" <<'EOF'
import sys
hw, p, ring, zigzag, llama3 = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
print(f"{hw} {p:6} varlen  zigzag/ring {ring / zigzag:.2f}  llama3/ring {ring / llama3:.2f}")
EOF
  done
done

# USP: Ulysses over U GPUs times a ring over 8 / U, every ring layout, over pure Ulysses.
usp=(--hardware a100 --kernel fa2 --heads 8 --kv-heads 8 --head-dim 128 --batch 2 -n 128k -N 8 --pass fwd)
ulysses=$("$stripesim" simulate "${usp[@]}" --cp ulysses --layouts contiguous --format csv |
  python3 -c "import csv, sys; print([r['time_us'] for r in csv.DictReader(sys.stdin)][0])")
for cp in hybrid:4x2 hybrid:2x4 ring; do
  "$stripesim" simulate "${usp[@]}" --cp "$cp" --layouts contiguous,zigzag,striped --format csv |
    python3 -c "import csv, sys; t = {r['layout']: float(r['time_us']) for r in csv.DictReader(sys.stdin)}; \
print(f\"usp $cp over ulysses: \" + '  '.join(f'{k} {float(sys.argv[1]) / v:.2f}' for k, v in t.items()))" "$ulysses"
done
