#!/usr/bin/env bash
# Configures and builds stripesim (Release) into ./build with every core.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
