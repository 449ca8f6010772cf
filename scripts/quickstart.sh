#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job on the
# shipped default configuration (the paper's setting: n = 256k, N = 8, A100 tiles 2048x4096,
# contiguous vs striped vs zigzag), printing the comparison table.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
echo
./build/cli/stripesim analyze --experiment configs/analyze/default.json
echo
scripts/default-report.sh
