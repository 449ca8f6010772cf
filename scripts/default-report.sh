#!/usr/bin/env bash
# Writes the full default report to reports/default/: the JSON of analyze (the shipped default
# configuration), tms (the paper's 1B on 8 A100s at 256k), sweep (the paper's TMS grid) and
# simulate (the default ring), then report.md with its SVG figures.
set -euo pipefail
cd "$(dirname "$0")/.."
stripesim=./build/cli/stripesim
out=reports/default
mkdir -p "$out"
"$stripesim" analyze --experiment configs/analyze/default.json --format json --output "$out/analyze.json"
"$stripesim" tms --model 1b --hardware a100 --devices 8 --seq-len 256k --format json --output "$out/tms.json"
"$stripesim" sweep --experiment configs/experiments/paper-tms.json --format json --output "$out/sweep.json"
"$stripesim" simulate --format json --output "$out/simulate.json"
"$stripesim" report "$out/analyze.json" "$out/tms.json" "$out/sweep.json" "$out/simulate.json" --out-dir "$out"
