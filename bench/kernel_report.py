#!/usr/bin/env python3
"""Joins bench_kernel_gpu's and sdpa_reference.py's JSON lines into
OUT_DIR/kernel-<gpu>.json and .md: per (pass, sequence length, mask), stripesim's best tile next
to PyTorch SDPA's same pass, with the ratio stripesim / SDPA (of TFLOP/s; the same as SDPA time /
stripesim time), one row per stripesim kernel (forward: flash, wmma; backward: scalar, wmma) and
shape. Lines without a "pass" are forward ones (files written before the backward was timed).
With --flash-jsonl, SDPA's FlashAttention-2 backend (sdpa_reference.py --sdpa-backend flash) on the
same shapes gets two more columns: its TFLOP/s and stripesim / it.

Usage: bench/kernel_report.py [--flash-jsonl FA2_JSONL] STRIPESIM_JSONL SDPA_JSONL OUT_DIR [COMMAND ...]
(COMMAND: the command lines that produced the inputs, recorded in both outputs.)
"""
import argparse
import json
import re
import sys
from pathlib import Path


def read_lines(path):
    rows = []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flash-jsonl", help="sdpa_reference.py --sdpa-backend flash on the same shapes")
    parser.add_argument("stripesim_jsonl")
    parser.add_argument("sdpa_jsonl")
    parser.add_argument("out_dir")
    parser.add_argument("commands", nargs="*")
    args = parser.parse_args()
    ours, sdpa = read_lines(args.stripesim_jsonl), read_lines(args.sdpa_jsonl)
    flash = read_lines(args.flash_jsonl) if args.flash_jsonl else None
    out_dir = Path(args.out_dir)
    commands = args.commands
    if not ours or not sdpa or flash == []:
        print("kernel_report.py: an input has no JSON lines", file=sys.stderr)
        return 1
    device = ours[0]["device"]
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")

    def pass_of(row):
        return row.get("pass", "fwd")

    best = {}
    for row in ours:
        key = (pass_of(row), row.get("kernel", "wmma"), row["seq_len"], row["mask"])
        if key not in best or row["tflops"] > best[key]["tflops"]:
            best[key] = row
    reference = {(pass_of(row), row["seq_len"], row["mask"]): row for row in sdpa}
    flash_reference = {(pass_of(row), row["seq_len"], row["mask"]): row for row in flash or []}
    table = []
    # Forward rows first, then by kernel, mask and length.
    for key in sorted(best, key=lambda k: (k[0] != "fwd", k[1], k[3], k[2])):
        ours_row = best[key]
        sdpa_row = reference.get((key[0], key[2], key[3]))
        flash_row = flash_reference.get((key[0], key[2], key[3]))
        row = {
            "pass": key[0],
            "kernel": key[1],
            "seq_len": key[2],
            "mask": key[3],
            "stripesim_tile": ours_row["tile"],
            "stripesim_ms": ours_row["median_ms"],
            "stripesim_tflops": ours_row["tflops"],
            "sdpa_ms": sdpa_row["median_ms"] if sdpa_row else None,
            "sdpa_tflops": sdpa_row["tflops"] if sdpa_row else None,
            "ratio": round(ours_row["tflops"] / sdpa_row["tflops"], 3) if sdpa_row else None,
        }
        if flash is not None:
            row["fa2_tflops"] = flash_row["tflops"] if flash_row else None
            row["ratio_fa2"] = round(ours_row["tflops"] / flash_row["tflops"], 3) if flash_row else None
        table.append(row)

    out_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "device": device,
        "dtype": ours[0]["dtype"],
        "heads": ours[0]["heads"],
        "head_dim": ours[0]["head_dim"],
        "timing": "median of reps after warm-up, CUDA events; TFLOP/s = 4 * unmasked pairs * head_dim * heads / time "
                  "(the backward: 10 *, its five products against the forward's two)",
        "commands": commands,
        "comparison": table,
        "stripesim": ours,
        "sdpa": sdpa,
    }
    if flash is not None:
        report["sdpa_flash"] = flash
    (out_dir / f"kernel-{slug}.json").write_text(json.dumps(report, indent=2) + "\n")

    lines = [
        f"# Attention kernel vs PyTorch SDPA on {device}",
        "",
        f"{report['dtype']}, {report['heads']} heads, head_dim {report['head_dim']}, one device (plain attention, "
        "no ring). Median of the timed repetitions after warm-up, CUDA events. TFLOP/s counts unmasked pairs only "
        "(4 x pairs x head_dim x heads; the backward, timed alone after one forward, 10 x). stripesim: each kernel's "
        "best tile per row (all tiles in the JSON).",
        "",
        "| pass | kernel | mask | n | tile | stripesim ms | stripesim TFLOP/s | SDPA ms | SDPA TFLOP/s | stripesim / SDPA |"
        + (" FA2 TFLOP/s | stripesim / FA2 |" if flash is not None else ""),
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if flash is not None else ""),
    ]
    for row in table:
        def cell(x):
            return "—" if x is None else f"{x}"
        lines.append(
            f"| {row['pass']} | {row['kernel']} | {row['mask']} | {row['seq_len']} | {row['stripesim_tile']} | {row['stripesim_ms']:.3f} | "
            f"{row['stripesim_tflops']:.1f} | {cell(row['sdpa_ms'])} | {cell(row['sdpa_tflops'])} | {cell(row['ratio'])} |"
            + (f" {cell(row['fa2_tflops'])} | {cell(row['ratio_fa2'])} |" if flash is not None else ""))
    if sdpa and "torch" in sdpa[0]:
        lines += ["", f"SDPA: PyTorch {sdpa[0]['torch']}, backend {sdpa[0].get('sdpa_backend', 'auto')}."]
    if flash:
        lines += [f"FA2: the same PyTorch's SDPA, backend {flash[0].get('sdpa_backend', 'flash')} (FlashAttention-2)."]
    if commands:
        lines += ["", "Commands:", "", "```"] + commands + ["```"]
    (out_dir / f"kernel-{slug}.md").write_text("\n".join(lines) + "\n")
    print(out_dir / f"kernel-{slug}.json")
    print(out_dir / f"kernel-{slug}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
