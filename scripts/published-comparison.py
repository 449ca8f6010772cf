#!/usr/bin/env python3
"""stripesim's predictions for the settings of four published benchmarks and of a paper's training
steps (README "Predicted against published measurements"), beside the published figures, with the
error of each.

ring-flash-attention's: 8 GPUs, Llama-3.1 8B's attention (and, in its earlier version, 5 heads of
128), 8k tokens per GPU, FlashAttention-2 on an A100 and on an H800 (the `h800` preset: an H100
with slower NVLink, running the H100's kernel profiles): each layout's
or function's throughput over ring_attn (contiguous). USP's (long-context-attention): 8 A100s on
NVLink, 128k tokens, batch 2, forward, 8 heads of 128, 32, 8, 4 or 2 heads of 32, and 64 heads of
32 over 8 K/V heads: each Ulysses x ring split's throughput over Ulysses at its largest degree.
The USP paper's (Fang and Zhao 2024, arXiv 2405.07719, its table of attention on 8 A100-SXM4s on
NVLink): 32 heads of 128,
8 K/V heads, batch 1, forward, 32k and 128k tokens, basic (contiguous) and load-balanced (zigzag)
rings, each split over Ulysses at degree 8. The same paper's training steps (its Tables 5 and 6:
LLAMA2-7B on one node of 8 A800s, Llama-3 8B on two, Megatron-LM): each mesh of tensor parallelism
x Ulysses x ring's TFLOP/s per GPU over the best mesh's at that length, on the `a800` preset.
MagiAttention's (its blog's distributed benchmark, charts only): one node of 8 H100s,
FlashAttention-3, 8k tokens a GPU, and one of 8 B200s, cuDNN, 16k tokens a GPU, 64 heads over 8
K/V heads, causal and full masks, forward and backward timed apart: Ring P2P's and Ring
AllGather's TFLOP/s per GPU over Ulysses'; and its kernel benchmarks' single calls (one H100,
FlashAttention-3, cuDNN and FlashAttention-2, 4k to 128k tokens, no mask; one B200, PyTorch's
SDPA, 4k to 32k tokens, unmasked and causal), compared as rates, by relative error. The published
figures are the throughput ratios (and those rates) the projects report, cited in stripesim's
README.

    scripts/published-comparison.py                 # every row, and each kind's mean and worst error
    scripts/published-comparison.py --max-mean 0.06  # exit 1 when one attention layer's mean error is above 0.06
    scripts/published-comparison.py --max-mean-steps 0.11  # the same for the training-step rows
    scripts/published-comparison.py --max-mean-charts 0.11  # the same for MagiAttention's chart rows
    scripts/published-comparison.py --max-mean-kernels 0.08  # the mean relative error of its kernel rates
    scripts/published-comparison.py --readme README.md  # exit 1 where its tables say otherwise

Run from anywhere after building (build/cli/stripesim); a few seconds."""
import argparse
import csv
import io
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
STRIPESIM = ROOT / "build" / "cli" / "stripesim"
# The README section whose tables --readme checks.
README_SECTION = "### Predicted against published measurements"

# The four packings ring-flash-attention's varlen benchmark cycles through (its per-GPU
# cu_seqlens times 8).
PACKINGS = ["65536", "2048,59136,4352", "32768,32768", "24832,25600,12800,1280,1024"]

# ring-flash-attention's README: iterations per second of (ring_attn, zigzag_ring, and stripe_attn
# or, for the varlen functions, llama3_flash_attn_varlen_func) per (hardware, pass, shape); the
# ratios are over ring_attn. Its "5 heads" rows are from the README's earlier version.
RFA_ITERATIONS = {
    ("a100", "fwd", "llama"): (24.0, 38.2, 32.5),
    ("a100", "fwdbwd", "llama"): (6.2, 10.6, 9.75),
    ("h800", "fwd", "llama"): (38.5, 63.0, 55.0),
    ("h800", "fwdbwd", "llama"): (10.4, 17.4, 16.0),
    ("a100", "fwd", "5 heads"): (124.4, 179.0, 163.9),
    ("a100", "fwdbwd", "5 heads"): (33.3, 49.5, 45.9),
    ("h800", "fwd", "5 heads"): (208.0, 283.0, 259.6),
    ("h800", "fwdbwd", "5 heads"): (54.3, 75.7, 76.9),
    ("h800", "fwd", "varlen"): (52.4, 74.8, 60.8),
    ("h800", "fwdbwd", "varlen"): (14.4, 21.4, 16.4),
    ("a100", "fwd", "varlen"): (33.1, 47.9, 34.3),
    ("a100", "fwdbwd", "varlen"): (8.7, 13.4, 9.7),
}

# Published throughput ratios: (table, hardware, pass, shape, function) -> ratio.
PUBLISHED = {}
for (hardware, pass_, shape), (ring, zigzag, third) in RFA_ITERATIONS.items():
    for function, value in (("zigzag", zigzag), ("llama3" if shape == "varlen" else "striped", third)):
        PUBLISHED[("ring-flash-attention", hardware, pass_, shape, function)] = round(value / ring, 3)

# USP's benchmark table (A100, forward, 128k tokens, batch 2, the unpacked interface's columns):
# iterations per second of (contiguous, zigzag, striped) at each Ulysses degree, per (heads, K/V
# heads, head size); the ratios are over the largest degree's contiguous (8, or the K/V heads).
USP_ITERATIONS = {
    (8, 8, 128): {8: (20.983, 21.002, 20.976), 4: (15.496, 21.464, 20.54), 2: (13.181, 21.201, 20.355), 1: (11.332, 17.778, 17.057)},
    (32, 32, 32): {8: (15.867, 15.829, 15.834), 4: (10.929, 15.699, 15.486), 2: (9.176, 15.244, 15.055), 1: (7.922, 12.445, 12.608)},
    (8, 8, 32): {8: (58.13, 57.9, 57.937), 4: (41.026, 57.362, 56.217), 2: (35.23, 57.404, 55.849), 1: (31.658, 50.126, 49.559)},
    (4, 4, 32): {4: (75.021, 97.969, 99.684), 2: (66.733, 96.333, 95.844), 1: (60.022, 94.25, 89.582)},
    (2, 2, 32): {2: (111.209, 159.078, 151.074), 1: (109.662, 151.82, 142.977)},
    (64, 8, 32): {8: (8.375, 8.37, 8.371), 4: (5.562, 8.054, 8.033), 2: (4.74, 8.038, 7.923), 1: (4.38, 7.819, 7.416)},
}
LAYOUTS = ("contiguous", "zigzag", "striped")

# The USP paper's attention table on 8 A100-SXM4s: iterations per second of (basic ring, zigzag
# ring) at each Ulysses degree, per sequence length; ratios over degree 8's basic ring.
USP_PAPER_ITERATIONS = {
    "32k": {8: (135.569, 136.375), 4: (103.525, 132.979), 2: (91.365, 132.979), 1: (81.985, 113.79)},
    "128k": {8: (2.782, 2.785), 4: (2.024, 2.771), 2: (1.73, 2.89), 1: (1.628, 2.91)},
}

# MagiAttention's distributed benchmark (its blog "Long-Context Attention Benchmark",
# docs/source/blog/cp_benchmark.md, and exps/dist_attn/benchmark_conf.py: 64 query heads over 8
# K/V heads of 128, batch 1, bf16, each pass timed alone, the slowest rank's time): TFLOP/s per GPU
# of (Ulysses, Ring P2P, Ring AllGather) at 8 GPUs, one node, per (hardware, mask, pass). The blog
# gives bar charts only: these are the bars' tops measured in the charts' pixels against their
# gridlines (about +-3 TFLOP/s: a top is read where no line drawn over the chart crosses it). Ratios
# over Ulysses. H100s: 8k tokens a GPU, FlashAttention-3 in every baseline (the blog's first
# version). B200s: 16k tokens a GPU, cuDNN in every baseline (its charts under
# assets/magi_attn/exp/distributed/b200/ at the repository's commit 2c641357, the v1.1.0 series).
# Its 16 to 64 GPUs span nodes of a cluster the blog withholds, and are left out.
MAGI_TFLOPS = {
    ("h100", "causal", "fwd"): (601.5, 421.2, 601.3),
    ("h100", "causal", "bwd"): (582.2, 432.3, 516.0),
    ("h100", "full", "fwd"): (605.4, 510.7, 606.2),
    ("h100", "full", "bwd"): (575.8, 496.3, 532.6),
    ("b200", "causal", "fwd"): (1164.8, 1139.9, 1199.3),
    ("b200", "causal", "bwd"): (820.3, 756.8, 692.3),
    ("b200", "full", "fwd"): (1237.3, 1211.3, 1256.7),
    ("b200", "full", "bwd"): (919.6, 809.2, 840.5),
}
# Per hardware: the profile of the kernel every baseline calls, and the 8 GPUs' tokens.
MAGI_SETUP = {"h100": ("fa3", "64k"), "b200": ("sdpa", "128k")}
MAGI_TABLE = "magiattention"

# MagiAttention's single-GPU kernel benchmark (its repository at commit bb1434d1, "updated exps",
# assets/ffa_exp/attn with fulll mask/attn-{fwd,bwd} with full mask/flops_report.csv, produced by
# exps/attn/benchmarks/bench_full.py): one call, batch 1, 48 query heads over 8 K/V heads of 128,
# bf16, no mask, forward and backward timed apart, the median TFLOP/s (forward FLOPs 4 n^2 h d,
# backward 2.5 times that) on one H100, per (pass, tokens) of (FlashAttention-3, cuDNN through
# TransformerEngine's fused attention, FlashAttention-2), to one decimal. Compared with the
# `fa3`, `sdpa` and `fa2` profiles' rates by relative error.
MAGI_KERNEL_TFLOPS = {
    ("fwd", "4k"): (691.9, 561.0, 370.7), ("fwd", "8k"): (662.8, 563.5, 366.6), ("fwd", "16k"): (672.2, 577.2, 379.3),
    ("fwd", "24k"): (689.7, 597.2, 384.5), ("fwd", "32k"): (689.6, 597.5, 380.4), ("fwd", "48k"): (691.8, 590.8, 375.5),
    ("fwd", "64k"): (681.1, 594.8, 356.6), ("fwd", "96k"): (671.3, 561.4, 358.0), ("fwd", "128k"): (646.9, 561.8, 363.7),
    ("bwd", "4k"): (520.8, 475.6, 291.7), ("bwd", "8k"): (574.9, 487.3, 306.9), ("bwd", "16k"): (604.8, 518.6, 318.7),
    ("bwd", "24k"): (619.5, 525.2, 295.8), ("bwd", "32k"): (546.4, 476.5, 322.2), ("bwd", "48k"): (594.1, 500.6, 320.6),
    ("bwd", "64k"): (616.2, 513.9, 321.1), ("bwd", "96k"): (588.9, 511.7, 321.5), ("bwd", "128k"): (580.5, 471.8, 321.4),
}
MAGI_KERNELS = ("fa3", "sdpa", "fa2")  # the profiles of the three columns
# The same benchmark on one B200 (v1.1.0's charts, assets/magi_attn/exp/kernel/b200/{full,causal}_mask/
# {fwd,bwd}/flops_report.png at commit 2c641357): 64 query heads over 8 K/V heads of 128, PyTorch's
# SDPA, per (mask, pass, tokens), read off the bars as above (a causal call's FLOPs count the
# n (n + 1) / 2 pairs). Compared with the b200 `sdpa` profile, which is derived from the two
# unmasked 16k bars (scripts/derive-kernel-profile.py) and so leaves them out; the 1k and 2k bars,
# launch-bound, are left out too.
MAGI_B200_KERNEL_TFLOPS = {
    ("full", "fwd"): {"4k": 1416.5, "8k": 1408.1, "32k": 1369.1},
    ("full", "bwd"): {"4k": 991.6, "8k": 1030.0, "32k": 1066.1},
    ("causal", "fwd"): {"4k": 1288.1, "8k": 1336.5, "16k": 1323.9, "32k": 1322.9},
    ("causal", "bwd"): {"4k": 726.7, "8k": 893.1, "16k": 939.5, "32k": 985.3},
}
KERNEL_TABLE = "magiattention-kernels"


# The USP paper's training steps (its Tables 5 and 6): Megatron-LM with TE's ring (dual-chunk,
# i.e. zigzag) and the paper's Ulysses, sequence-parallel TP, ZeRO-1, no recomputation, on one and
# on two RDMA-connected nodes of 8 A800s (NVLink 400 GB/s, 1.6 Tb/s a node between them).
# Measured TFLOP/s per GPU of each (TP, Ulysses, ring) mesh, data parallelism filling the GPUs, per
# (table, sequence length); ratios over the best mesh measured at that length.
USP_PAPER_STEP_TFLOPS = {
    ("5", "64k"): {(4, 2, 1): 154.49, (4, 1, 2): 151.40, (8, 1, 1): 141.85},
    ("5", "30k"): {(2, 4, 1): 155.98, (2, 1, 4): 147.77, (4, 1, 1): 150.05, (1, 8, 1): 163.42, (1, 1, 8): 142.16,
                   (8, 1, 1): 129.12},
    ("6", "64k"): {(1, 8, 2): 136.31, (1, 4, 4): 137.48, (1, 2, 8): 129.44, (1, 1, 16): 121.83, (8, 1, 2): 129.75,
                   (4, 2, 2): 122.45, (2, 4, 2): 87.67, (2, 2, 4): 89.35, (4, 1, 4): 122.57, (2, 1, 8): 101.35,
                   (8, 1, 1): 141.20},
    ("6", "80k"): {(1, 8, 2): 147.46, (1, 4, 4): 148.90, (1, 2, 8): 140.13, (1, 1, 16): 132.86, (8, 1, 2): 136.16,
                   (4, 2, 2): 137.49, (2, 4, 2): 111.05, (2, 2, 4): 110.81, (4, 1, 4): 130.27, (2, 1, 8): 121.14,
                   (8, 1, 1): 144.40},
    ("6", "120k"): {(8, 1, 2): 145.92, (4, 2, 2): 152.51, (2, 4, 2): 136.63, (4, 1, 4): 150.96},
}
USP_PAPER_STEP_SETUP = {  # per table: model, GPUs, topology
    "5": ("7b", 8, "nvswitch:8"),
    "6": ("llama3-8b", 16, "cluster:2x8:nic=200gbps:nics=8"),
}
STEP_TABLE = "usp-paper-step"


def mesh_name(mesh):
    return "x".join(map(str, mesh))


for (table, seq_len), rows in USP_PAPER_STEP_TFLOPS.items():
    best = max(rows.values())
    for mesh, tflops in rows.items():
        if tflops != best:  # the reference is 1 by definition
            PUBLISHED[(STEP_TABLE, "a800", "fwdbwd", f"table {table} {seq_len}", mesh_name(mesh))] = round(tflops / best, 3)


def usp_split(ulysses, devices=8):
    """--cp for Ulysses over `ulysses` of `devices` GPUs times a ring over the rest (one GPU: a ring of one)."""
    return "ring" if ulysses == 1 else "ulysses" if ulysses == devices else f"hybrid:{ulysses}x{devices // ulysses}"


def usp_shape(heads, kv_heads, head_dim):
    """A USP row's shape as keyed in PUBLISHED: "8x128", or "64/8x32" where K/V heads are fewer."""
    return f"{heads}x{head_dim}" if kv_heads == heads else f"{heads}/{kv_heads}x{head_dim}"


for (heads, kv_heads, head_dim), rows in USP_ITERATIONS.items():
    top = max(rows)
    for ulysses, iterations in rows.items():
        for layout, value in zip(LAYOUTS, iterations):
            # Pure Ulysses runs no ring: its layouts are one computation (measured within 0.4 %).
            if ulysses != 8 and (ulysses != top or layout != "contiguous"):
                key = ("usp", "a100", "fwd", f"{usp_shape(heads, kv_heads, head_dim)} {usp_split(ulysses)}", layout)
                PUBLISHED[key] = round(value / rows[top][0], 3)


for seq_len, rows in USP_PAPER_ITERATIONS.items():
    for ulysses, iterations in rows.items():
        for layout, value in zip(LAYOUTS, iterations):
            if ulysses != 8:  # pure Ulysses runs no ring
                PUBLISHED[("usp-paper", "a100", "fwd", f"{seq_len} {usp_split(ulysses)}", layout)] = round(value / rows[8][0], 3)


for (hardware, mask, pass_), (ulysses_tflops, *others) in MAGI_TFLOPS.items():
    for scheme, value in zip(("ring", "allgather"), others):
        PUBLISHED[(MAGI_TABLE, hardware, pass_, mask, scheme)] = round(value / ulysses_tflops, 3)


for (pass_, tokens), rates in MAGI_KERNEL_TFLOPS.items():
    for kernel, rate in zip(MAGI_KERNELS, rates):
        PUBLISHED[(KERNEL_TABLE, "h100", pass_, tokens, kernel)] = rate
for (mask, pass_), rates in MAGI_B200_KERNEL_TFLOPS.items():
    for tokens, rate in rates.items():
        PUBLISHED[(KERNEL_TABLE, "b200", pass_, f"{tokens} {mask}", "sdpa")] = rate


def row_error(key, predicted):
    """A row's error: predicted less published, or for a kernel rate (TFLOP/s, not a ratio) the
    relative error, predicted over published less 1."""
    if key[0] == KERNEL_TABLE:
        return predicted / PUBLISHED[key] - 1
    return predicted - PUBLISHED[key]


def times(*flags):
    """Every layout's time in microseconds from one simulate run (contiguous always among them)."""
    out = subprocess.run([STRIPESIM, "simulate", "--format", "csv", *flags], check=True, stdout=subprocess.PIPE,
                         text=True, cwd=ROOT).stdout
    return {row["layout"]: float(row["time_us"]) for row in csv.DictReader(io.StringIO(out))}


def pieces_file(folder, lengths):
    """ring_flash_attn_varlen_func's layout: every document cut into 8 contiguous pieces, piece d
    on device d, as a permutation file."""
    blocks, start = [[] for _ in range(8)], 0
    for length in map(int, lengths.split(",")):
        piece = length // 8
        for d in range(8):
            blocks[d] += range(start + d * piece, start + (d + 1) * piece)
        start += length
    path = pathlib.Path(folder) / f"pieces-{len(list(pathlib.Path(folder).iterdir()))}.json"  # no commas in a layout name
    path.write_text(json.dumps({"blocks": blocks}))
    return f"permutation:{path}"


def without_merges(folder, hardware):
    """The fa2 profile the hardware runs, as simulate reports it, with the merges between calls
    priced at nothing, as a file."""
    out = subprocess.run([STRIPESIM, "simulate", "--hardware", hardware, "--kernel", "fa2", "-N", "1", "-n", "1k",
                          "--layouts", "contiguous", "--summary-only", "--format", "json"],
                         check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT).stdout
    kernel = json.loads(out)["kernel"]
    kernel["merge"] = {field: 0.0 for field in kernel["merge"]}
    path = pathlib.Path(folder) / f"fa2-{hardware}-without-merges.json"
    path.write_text(json.dumps(kernel))
    return str(path)


def ring_flash_attention(folder):
    """Predicted ratios of ring-flash-attention's rows, keyed as PUBLISHED, and those of its
    Llama rows without merges (keyed the same, their shape "llama without merges")."""
    out = {}
    ring = ["-N", "8", "-n", "64k", "--layouts", "contiguous,zigzag,striped"]
    for hardware in ("a100", "h800"):
        merge_free = without_merges(folder, hardware)
        for pass_ in ("fwd", "fwdbwd"):
            common = ["--hardware", hardware, "--pass", pass_]
            for label, shape, kernel in (("5 heads", ["--heads", "5", "--kv-heads", "5"], "fa2"),
                                         ("llama", ["--model", "llama3-8b"], "fa2"),
                                         ("llama without merges", ["--model", "llama3-8b"], merge_free)):
                t = times(*common, *shape, *ring, "--kernel", kernel)
                for layout in ("zigzag", "striped"):
                    out[("ring-flash-attention", hardware, pass_, label, layout)] = t["contiguous"] / t[layout]
            # Varlen: throughput over the four packings is 4 over the sum of their times.
            total = {"ring": 0.0, "zigzag": 0.0, "llama3": 0.0}
            for lengths in PACKINGS:
                varlen = [*common, "--model", "llama3-8b", "-N", "8", "-n", "64k", "--kernel", "fa2",
                          "--mask", f"documents:{lengths}"]
                pieces = pieces_file(folder, lengths)
                t = times(*varlen, "--layouts", f"{pieces},doc-zigzag")
                total["ring"] += t[pieces]
                total["zigzag"] += t["doc-zigzag"]
                total["llama3"] += times(*varlen, "--layouts", "contiguous", "--cp", "allgather:2")["contiguous"]
            for function in ("zigzag", "llama3"):
                out[("ring-flash-attention", hardware, pass_, "varlen", function)] = total["ring"] / total[function]
    return out


def usp():
    """Ulysses over U GPUs times a ring over 8 / U, every ring layout, over Ulysses at its largest
    degree (8, or the head count)."""
    out = {}
    for heads, kv_heads, head_dim in USP_ITERATIONS:
        shape = ["--hardware", "a100", "--kernel", "fa2", "--heads", str(heads), "--kv-heads", str(kv_heads),
                 "--head-dim", str(head_dim), "--batch", "2", "-n", "128k", "-N", "8", "--pass", "fwd"]
        degrees = [u for u in (8, 4, 2, 1) if u <= kv_heads]
        t = {u: times(*shape, "--cp", usp_split(u), "--layouts", ",".join(LAYOUTS)) for u in degrees}
        top = t[degrees[0]]["contiguous"]
        for ulysses in degrees:
            for layout, us in t[ulysses].items():
                key = ("usp", "a100", "fwd", f"{usp_shape(heads, kv_heads, head_dim)} {usp_split(ulysses)}", layout)
                out[key] = top / us
    return out


def usp_paper():
    """The USP paper's splits of 8 A100s, 32 heads of 128 over 8 K/V heads, over pure Ulysses."""
    out = {}
    for seq_len in USP_PAPER_ITERATIONS:
        shape = ["--hardware", "a100", "--kernel", "fa2", "--heads", "32", "--kv-heads", "8", "--head-dim", "128",
                 "--batch", "1", "-n", seq_len, "-N", "8", "--pass", "fwd", "--layouts", "contiguous,zigzag"]
        t = {u: times(*shape, "--cp", usp_split(u)) for u in (8, 4, 2, 1)}
        for ulysses in (4, 2, 1):
            for layout, us in t[ulysses].items():
                out[("usp-paper", "a100", "fwd", f"{seq_len} {usp_split(ulysses)}", layout)] = t[8]["contiguous"] / us
    return out


def magiattention():
    """Ring P2P and Ring AllGather over Ulysses on one node of 8 GPUs, every baseline on the
    hardware's kernel: the ring's dual-chunk layout (zigzag) under the causal mask, its merges
    TransformerEngine's fused correction kernels, as the benchmark's ring calls them."""
    out = {}
    for hardware, mask, pass_ in MAGI_TFLOPS:
        kernel, tokens = MAGI_SETUP[hardware]
        shape = ["--hardware", hardware, "--kernel", kernel, "--heads", "64", "--kv-heads", "8", "--head-dim", "128",
                 "-n", tokens, "-N", "8", "--pass", pass_, "--mask", "causal" if mask == "causal" else "bidirectional",
                 "--layouts", "zigzag" if mask == "causal" else "contiguous"]
        t = {cp: next(iter(times(*shape, "--cp", cp, *(["--merges", "fused"] if cp == "ring" else [])).values()))
             for cp in ("ulysses", "ring", "allgather")}
        for scheme in ("ring", "allgather"):
            out[(MAGI_TABLE, hardware, pass_, mask, scheme)] = t["ulysses"] / t[scheme]
    return out


def call_tflops(hardware, kernel, heads, tokens, mask, pass_):
    """A profile's TFLOP/s for one call as the kernel benchmark times it: the call alone
    (`--topology ideal`: nothing but the call), its FLOPs counted as the benchmark counts them
    (4 per pair per query head per head dimension forward, 2.5 times that backward)."""
    n = int(tokens[:-1]) * 1024
    pairs = n * n if mask == "full" else n * (n + 1) / 2
    flops = 4.0 * pairs * heads * 128 * (2.5 if pass_ == "bwd" else 1.0)
    us = times("--hardware", hardware, "--kernel", kernel, "--heads", str(heads), "--kv-heads", "8",
               "--head-dim", "128", "-n", tokens, "-N", "1", "--pass", pass_,
               "--mask", "causal" if mask == "causal" else "bidirectional", "--layouts", "contiguous",
               "--topology", "ideal")["contiguous"]
    return flops / us / 1e6


def magiattention_kernels():
    """Each profile's TFLOP/s for the kernel benchmark's calls: unmasked, 48 heads on an H100;
    unmasked and causal, 64 heads on a B200."""
    out = {}
    for pass_, tokens in MAGI_KERNEL_TFLOPS:
        for kernel in MAGI_KERNELS:
            out[(KERNEL_TABLE, "h100", pass_, tokens, kernel)] = call_tflops("h100", kernel, 48, tokens, "full", pass_)
    for (mask, pass_), rates in MAGI_B200_KERNEL_TFLOPS.items():
        for tokens in rates:
            out[(KERNEL_TABLE, "b200", pass_, f"{tokens} {mask}", "sdpa")] = call_tflops("b200", "sdpa", 64, tokens, mask, pass_)
    return out


def step_throughput(table, seq_len, mesh):
    """A mesh's predicted training throughput (model FLOPs utilisation) in the paper's setting:
    the ring zigzag as TE's dual-chunk layout with its fused merges, micro-batches of one sequence."""
    model, gpus, topology = USP_PAPER_STEP_SETUP[table]
    tp, ulysses, ring = mesh
    merges = ["--merges", "fused"] if ring > 1 else []  # pure Ulysses makes one call: nothing to merge
    out = subprocess.run([STRIPESIM, "simulate", "--scope", "step", "--hardware", "a800", "--topology", topology,
                          "--model", model, "-n", seq_len, "-M", str(tp), "-N", str(ulysses * ring),
                          "-D", str(gpus // (tp * ulysses * ring)), "--cp", usp_split(ulysses, ulysses * ring),
                          "--layouts", "zigzag", *merges, "--zero", "1", "--format", "csv"],
                         check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT).stdout
    return float(next(csv.DictReader(io.StringIO(out)))["mfu"])


def usp_paper_step():
    """Each mesh's throughput over that of the best measured mesh at the same length."""
    out = {}
    for (table, seq_len), rows in USP_PAPER_STEP_TFLOPS.items():
        best = max(rows, key=rows.get)
        reference = step_throughput(table, seq_len, best)
        for mesh in rows:
            if mesh != best:
                key = (STEP_TABLE, "a800", "fwdbwd", f"table {table} {seq_len}", mesh_name(mesh))
                out[key] = step_throughput(table, seq_len, mesh) / reference
    return out


def readme_cells(text):
    """The predicted cells of the README's tables under "Predicted against published
    measurements": (line number, key as in PUBLISHED, the cell's text), and the error cells as
    (line number, key, text) with the key's last part "error"."""
    lines = text.split("\n")
    start = lines.index(README_SECTION)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    header, cells = "", []

    def split(text):
        match = re.match(r"Ulysses (\d) x ring (\d)", text)
        return f"hybrid:{match.group(1)}x{match.group(2)}" if match else "ring"

    for number, line in enumerate(lines[start:end], start + 1):
        if not line.startswith("|") or line.startswith("|---"):
            continue
        row = [cell.strip() for cell in line.strip("|").split("|")]
        if row[1] in ("pass", "split", "layout") or row[0] in ("heads", "n", "split", "GPUs", "table"):
            header = line
            continue
        found = []  # (key, predicted cell, error cell)
        if header.startswith("| GPUs | mask |"):  # "8x H100": the hardware preset is the second word
            found.append(((MAGI_TABLE, row[0].split("x ")[1].lower(), row[2], row[1], row[3]), 5, 6))
        elif header.startswith("| GPUs |"):
            hardware, pass_ = row[0].split("x ")[1].lower(), "fwd" if row[1] == "fwd" else "fwdbwd"
            if "function" in header:
                found.append((("ring-flash-attention", hardware, pass_, "varlen", row[2].split()[0]), 4, 5))
            else:
                shape = "llama" if "without merges" in header else "5 heads"
                found.append((("ring-flash-attention", hardware, pass_, shape, row[2]), 4, 5))
                if "without merges" in header:
                    found.append((("ring-flash-attention", hardware, pass_, "llama without merges", row[2]), 6, None))
        elif header.startswith("| split |"):
            found.append((("usp", "a100", "fwd", f"8x128 {split(row[0])}", row[1]), 3, 4))
        elif header.startswith("| heads |"):
            heads = re.match(r"(\d+)(?: over (\d+) K/V)?$", row[0])
            shape = usp_shape(heads.group(1), heads.group(2) or heads.group(1), 32)
            found.append((("usp", "a100", "fwd", f"{shape} {split(row[1])}", row[2]), 4, 5))
        elif header.startswith("| table |"):
            if row[7] != "-":  # the reference mesh of its length reads 1 by definition
                mesh = row[2].replace(" x ", "x")
                found.append(((STEP_TABLE, "a800", "fwdbwd", f"table {row[0]} {row[1]}", mesh), 6, 7))
        elif header.startswith("| B200 call |"):  # "4k causal"
            found.append(((KERNEL_TABLE, "b200", row[1], row[0], "sdpa"), 3, 4))
        elif header.startswith("| tokens |"):  # per kernel: its published rate, the predicted one, the error
            for column, kernel in enumerate(MAGI_KERNELS):
                found.append(((KERNEL_TABLE, "h100", row[1], row[0], kernel), 3 + 3 * column, 4 + 3 * column))
        elif header.startswith("| n |"):
            for layout, column in (("contiguous", 3), ("zigzag", 6)):
                found.append((("usp-paper", "a100", "fwd", f"{row[0]} {split(row[1])}", layout), column, column + 1))
        for key, predicted, error in found:
            cells.append((number, key, row[predicted]))
            if error is not None:
                cells.append((number, (*key, "error"), row[error]))
    return cells


def readme_mismatches(path, text, predicted):
    """Where the README's tables say other than `predicted` at two decimals."""
    out = []
    for number, key, cell in readme_cells(text):
        row = key[:-1] if key[-1] == "error" else key
        if row not in predicted:
            if key[-1] != "error":  # said once a row
                out.append(f"{path}:{number}: {' '.join(row)}: a row stripesim has no prediction for")
            continue
        if key[-1] == "error" and key[0] == KERNEL_TABLE:  # relative, in per cent
            value = 100 * row_error(row, predicted[row])
            expected = "0.0 %" if abs(value) < 0.05 else f"{value:+.1f} %"
        elif key[-1] == "error":
            value = row_error(row, predicted[row])
            expected = "0.00" if abs(value) < 0.005 else f"{value:+.2f}"
        elif key[0] == KERNEL_TABLE:  # TFLOP/s
            expected = f"{predicted[key]:.0f}"
        else:
            expected = f"{predicted[key]:.2f}"
        if cell != expected:
            out.append(f"{path}:{number}: {' '.join(key)}: the table says {cell}, stripesim gives {expected}")
    return out


def main():
    global STRIPESIM
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-mean", type=float,
                        help="exit 1 when the mean absolute error of the layout and algorithm rows is above this")
    parser.add_argument("--max-mean-steps", type=float,
                        help="exit 1 when the mean absolute error of the training-step rows is above this")
    parser.add_argument("--max-mean-charts", type=float,
                        help="exit 1 when the mean absolute error of the MagiAttention chart rows is above this")
    parser.add_argument("--max-mean-kernels", type=float,
                        help="exit 1 when the mean relative error of the single-call kernel rates is above this")
    parser.add_argument("--stripesim", default=str(STRIPESIM), help="the stripesim executable (default: build/cli/stripesim)")
    parser.add_argument("--readme", type=pathlib.Path,
                        help="exit 1 where this README's tables of published measurements show other predictions")
    args = parser.parse_args()
    readme = None
    if args.readme is not None:
        try:
            readme = args.readme.read_text()
        except (OSError, UnicodeDecodeError) as error:
            print(f"published-comparison: --readme {args.readme}: cannot be read ({error.strerror if isinstance(error, OSError) else error})", file=sys.stderr)
            return 2
        if README_SECTION not in readme.split("\n"):
            print(f"published-comparison: --readme {args.readme}: has no heading '{README_SECTION}'", file=sys.stderr)
            return 2
    STRIPESIM = pathlib.Path(args.stripesim).resolve()
    with tempfile.TemporaryDirectory() as folder:
        predicted = ring_flash_attention(folder)
    predicted.update(usp())
    predicted.update(usp_paper())
    predicted.update(usp_paper_step())
    predicted.update(magiattention())
    predicted.update(magiattention_kernels())
    # Four summaries, each with its own guard: one attention layer's layouts and algorithms, whole
    # training steps (the step model's matmuls, tensor parallelism and memory besides), the
    # algorithms of MagiAttention's benchmark (read off its charts, never fitted to), and
    # single calls of its kernel benchmark (rates, not ratios: their error is relative).
    # Per table of its own (None: every other table's rows): the kind's name, its guard and flag.
    kinds = {None: ("layout and algorithm", args.max_mean, "--max-mean"),
             STEP_TABLE: ("training-step", args.max_mean_steps, "--max-mean-steps"),
             MAGI_TABLE: ("MagiAttention chart", args.max_mean_charts, "--max-mean-charts"),
             KERNEL_TABLE: ("single-call kernel rate", args.max_mean_kernels, "--max-mean-kernels")}
    errors = {table: [] for table in kinds}
    for key, published in PUBLISHED.items():
        error = row_error(key, predicted[key])
        if key[0] == KERNEL_TABLE:
            line = f"published {published:.1f}  predicted {predicted[key]:.1f}  error {100 * error:+.1f} %"
        else:
            line = f"published {published:.2f}  predicted {predicted[key]:.2f}  error {error:+.2f}"
        errors[key[0] if key[0] in kinds else None].append(abs(error))
        print(f"{' '.join(key):60} {line}")
    for table, (kind, limit, flag) in kinds.items():
        values = errors[table]
        mean, worst = sum(values) / len(values), max(values)
        relative = " (relative)" if table == KERNEL_TABLE else ""
        print(f"{len(values)} {kind} rows: mean error {mean:.3f}{relative}, worst {worst:.2f}")
        if limit is not None and mean > limit:
            print(f"published-comparison: mean error {mean:.3f} of the {kind} rows is above {flag} {limit}",
                  file=sys.stderr)
            return 1
    if readme is not None:
        mismatches = readme_mismatches(args.readme, readme, predicted)
        for mismatch in mismatches:
            print(f"published-comparison: {mismatch}", file=sys.stderr)
        if mismatches:
            return 1
        print(f"{args.readme}: its tables show these predictions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
