#!/usr/bin/env python3
"""bench/kernel_report.py without a GPU: it joins stripesim's and SDPA's JSON lines per (pass,
sequence length, mask), keeps each kernel's best tile, and divides the TFLOP/s; lines written
before the backward was timed (no "pass") are forward ones; with --flash-jsonl, SDPA's
FlashAttention-2 backend gets its own columns. Usage: test_kernel_report.py REPO"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def line(**fields):
    return json.dumps(fields)


def main() -> int:
    repo = Path(sys.argv[1])
    common = {"device": "NVIDIA H200", "dtype": "bf16", "heads": 16, "head_dim": 128, "reps": 20, "min_ms": 1.0}
    ours = [
        line(impl="stripesim", kernel="flash", seq_len=8192, mask="causal", tile="128x128", median_ms=1.0, tflops=300.0, **common),
        line(impl="stripesim", kernel="flash", seq_len=8192, mask="causal", tile="64x64", median_ms=1.5, tflops=200.0, **common),
        line(impl="stripesim", **{"pass": "bwd"}, kernel="wmma", seq_len=8192, mask="causal", tile="128x128", median_ms=4.0,
             tflops=150.0, **common),
    ]
    sdpa = [
        line(impl="torch-sdpa", **{"pass": "fwd"}, seq_len=8192, mask="causal", median_ms=0.5, tflops=600.0, torch="2.11", **common),
        line(impl="torch-sdpa", **{"pass": "bwd"}, seq_len=8192, mask="causal", median_ms=1.5, tflops=400.0, torch="2.11", **common),
    ]
    failures = []
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "ours.jsonl").write_text("\n".join(ours) + "\n")
        (work / "sdpa.jsonl").write_text("\n".join(sdpa) + "\n")
        done = subprocess.run([sys.executable, str(repo / "bench/kernel_report.py"), str(work / "ours.jsonl"),
                               str(work / "sdpa.jsonl"), str(work / "out"), "the command"], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr)
            return 1
        report = json.loads((work / "out/kernel-nvidia-h200.json").read_text())
        rows = [(r["pass"], r["kernel"], r["stripesim_tile"], r["ratio"]) for r in report["comparison"]]
        expected = [("fwd", "flash", "128x128", 0.5), ("bwd", "wmma", "128x128", 0.375)]
        if rows != expected:
            failures.append(f"comparison rows {rows}, expected {expected}")
        markdown = (work / "out/kernel-nvidia-h200.md").read_text()
        for wanted in ("| fwd | flash | causal | 8192 | 128x128 |", "| bwd | wmma | causal | 8192 | 128x128 |", "the command"):
            if wanted not in markdown:
                failures.append(f"the markdown has no '{wanted}'")
        if "FA2" in markdown or "ratio_fa2" in report["comparison"][0]:
            failures.append("FA2 columns without --flash-jsonl")

        # FlashAttention-2 timed the forward only: its columns are filled there and empty ("—") for the backward.
        (work / "fa2.jsonl").write_text(line(impl="torch-sdpa", **{"pass": "fwd"}, seq_len=8192, mask="causal", median_ms=0.8,
                                             tflops=375.0, torch="2.11", sdpa_backend="flash", **common) + "\n")
        done = subprocess.run([sys.executable, str(repo / "bench/kernel_report.py"), "--flash-jsonl", str(work / "fa2.jsonl"),
                               str(work / "ours.jsonl"), str(work / "sdpa.jsonl"), str(work / "out2")], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr)
            return 1
        report = json.loads((work / "out2/kernel-nvidia-h200.json").read_text())
        rows = [(r["pass"], r["fa2_tflops"], r["ratio_fa2"]) for r in report["comparison"]]
        expected = [("fwd", 375.0, 0.8), ("bwd", None, None)]
        if rows != expected:
            failures.append(f"FA2 columns {rows}, expected {expected}")
        markdown = (work / "out2/kernel-nvidia-h200.md").read_text()
        for wanted in ("| stripesim / FA2 |", "| 0.5 | 375.0 | 0.8 |", "| 0.375 | — | — |", "backend flash (FlashAttention-2)"):
            if wanted not in markdown:
                failures.append(f"the markdown has no '{wanted}'")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print("kernel_report.py joins both passes and keeps the best tile")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
