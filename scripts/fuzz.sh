#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (AddressSanitizer + UndefinedBehaviorSanitizer) and runs
# each on a copy of its committed corpus (fuzz/corpus/<target>): `scripts/fuzz.sh RUNS [TARGETS]`
# runs each target RUNS times (default 1,000,000, the bar before calling a parser hardened; CI runs
# a few thousand); TARGETS picks some of "specs json cli" (default: all three), e.g.
# `scripts/fuzz.sh 1000000 cli`. Needs clang and libclang-rt-14-dev (scripts/install-deps.sh --fuzz).
# A crash or hang leaves its input in the repository root (crash-*, timeout-*, oom-*).
# No mpi backend: the CLI fuzzer runs commands in-process, where MPI_Init must never happen.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
targets="${2:-specs json cli}"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined" \
  -DSTRIPESIM_BUILD_FUZZERS=ON -DSTRIPESIM_BUILD_TESTS=OFF -DSTRIPESIM_BUILD_BENCHMARKS=OFF -DSTRIPESIM_WITH_CUDA=OFF -DSTRIPESIM_WITH_MPI=OFF >/dev/null
# shellcheck disable=SC2046  # one --target per word of $targets
cmake --build build-fuzz -j "$(nproc)" --target $(printf 'fuzz_%s ' $targets)
status=0
for target in $targets; do
  work=$(mktemp -d)
  cp fuzz/corpus/"$target"/* "$work"/
  echo "fuzz_$target: $runs runs"
  # A crash, a hang past the timeout or a sanitizer report makes libFuzzer exit non-zero. The
  # absolute artifact prefix matters for fuzz_cli, which runs each input in its own scratch folder.
  if ! ./build-fuzz/fuzz/fuzz_"$target" -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
      -artifact_prefix="$PWD/" -print_final_stats=1 "$work" > "$work.log" 2>&1; then
    status=1
    tail -40 "$work.log"
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss" "$work.log" || true
  rm -rf "$work" "$work.log"
done
exit "$status"
