#!/usr/bin/env python3
# python3 to_block_costs.py heads.jsonl > configs/measurements/h100/block-costs-fa2-sdpa-heads.json
# heads.jsonl (bench/sdpa_reference.py lines) -> stripesim.block-costs/1: one row per (n, heads),
# columns <kernel>_<full|causal>_<fwd|fwdbwd>_us, fwdbwd = the forward + the backward timed alone.
import json, sys, collections
rows = collections.OrderedDict()
device = torch = None
for line in open(sys.argv[1]):
    r = json.loads(line)
    device, torch = r["device"], r["torch"]
    kernel = "fa2" if r["sdpa_backend"] == "flash" else "sdpa"
    shape = "full" if r["mask"] == "bidirectional" else "causal"
    row = rows.setdefault((r["seq_len"], r["heads"]), {"c": r["seq_len"], "heads": r["heads"], "head_dim": r["head_dim"]})
    row[f"{kernel}_{shape}_{r['pass']}_us"] = r["median_ms"] * 1000
for row in rows.values():
    for kernel in ("fa2", "sdpa"):
        for shape in ("full", "causal"):
            row[f"{kernel}_{shape}_fwdbwd_us"] = row[f"{kernel}_{shape}_fwd_us"] + row.pop(f"{kernel}_{shape}_bwd_us")
doc = {"schema": "stripesim.block-costs/1", "device": device, "torch": torch,
       "method": ("one attention call on a c x c block (batch 1) at 1 to 32 heads of 128, full (no mask) or causal; "
                  "fa2 = scaled_dot_product_attention with the flash backend (FlashAttention-2), sdpa = the backend "
                  "PyTorch picks (cuDNN); bench/sdpa_reference.py: 3 warm-up calls, median of 10 between CUDA events; "
                  "fwdbwd = the forward plus the backward timed alone after one forward; microseconds"),
       "rows": sorted(rows.values(), key=lambda r: (r["c"], r["heads"]))}
json.dump(doc, sys.stdout, indent=1)
print()
