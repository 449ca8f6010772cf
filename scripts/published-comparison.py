#!/usr/bin/env python3
"""stripesim's predictions for the settings of two published benchmarks (README "Predicted
against published measurements").

ring-flash-attention's: 8 GPUs, Llama-3.1 8B's attention (and, in its earlier version, 5 heads of
128), 8k tokens per GPU, FlashAttention-2 on an A100 and on an H100 (for the H800): each layout's
or function's throughput over ring_attn (contiguous). USP's (long-context-attention): 8 A100s on
NVLink, 128k tokens, batch 2, 8 heads of 128, forward: each Ulysses x ring split's throughput
over pure Ulysses. Run from anywhere after building (build/cli/stripesim)."""
import csv
import io
import json
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
STRIPESIM = ROOT / "build" / "cli" / "stripesim"

# The four packings ring-flash-attention's varlen benchmark cycles through (its per-GPU
# cu_seqlens times 8).
PACKINGS = ["65536", "2048,59136,4352", "32768,32768", "24832,25600,12800,1280,1024"]


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


def ring_flash_attention(folder):
    ring = ["-N", "8", "-n", "64k", "--kernel", "fa2", "--layouts", "contiguous,zigzag,striped"]
    for hardware in ("a100", "h100"):
        for pass_ in ("fwd", "fwdbwd"):
            common = ["--hardware", hardware, "--pass", pass_]
            for label, shape in (("5 heads", ["--heads", "5", "--kv-heads", "5"]), ("batch  ", ["--model", "llama3-8b"])):
                t = times(*common, *shape, *ring)
                print(f"{hardware} {pass_:6} {label} zigzag/ring {t['contiguous'] / t['zigzag']:.2f}  "
                      f"stripe/ring {t['contiguous'] / t['striped']:.2f}")
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
            print(f"{hardware} {pass_:6} varlen  zigzag/ring {total['ring'] / total['zigzag']:.2f}  "
                  f"llama3/ring {total['ring'] / total['llama3']:.2f}")


def usp():
    """Ulysses over U GPUs times a ring over 8 / U, every ring layout, over pure Ulysses."""
    shape = ["--hardware", "a100", "--kernel", "fa2", "--heads", "8", "--kv-heads", "8", "--head-dim", "128",
             "--batch", "2", "-n", "128k", "-N", "8", "--pass", "fwd"]
    ulysses = times(*shape, "--cp", "ulysses", "--layouts", "contiguous")["contiguous"]
    for cp in ("hybrid:4x2", "hybrid:2x4", "ring"):
        t = times(*shape, "--cp", cp, "--layouts", "contiguous,zigzag,striped")
        print(f"usp {cp} over ulysses: " + "  ".join(f"{k} {ulysses / v:.2f}" for k, v in t.items()))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        ring_flash_attention(folder)
    usp()
