#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (AddressSanitizer + UndefinedBehaviorSanitizer) and runs
# each on a copy of its committed corpus (fuzz/corpus/<target>): `scripts/fuzz.sh RUNS` runs each
# target RUNS times (default 1,000,000, the bar before calling a parser hardened); CI runs a few
# thousand. Needs clang and libclang-rt-14-dev (scripts/install-deps.sh --fuzz installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined" \
  -DSTRIPESIM_BUILD_FUZZERS=ON -DSTRIPESIM_BUILD_TESTS=OFF -DSTRIPESIM_BUILD_BENCHMARKS=OFF -DSTRIPESIM_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_specs fuzz_json
status=0
for target in specs json; do
  work=$(mktemp -d)
  cp fuzz/corpus/"$target"/* "$work"/
  echo "fuzz_$target: $runs runs"
  # A crash, a hang past the timeout or a sanitizer report makes libFuzzer exit non-zero.
  if ! ./build-fuzz/fuzz/fuzz_"$target" -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
      -print_final_stats=1 "$work" > "$work.log" 2>&1; then
    status=1
    tail -40 "$work.log"
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss" "$work.log" || true
  rm -rf "$work" "$work.log"
done
exit "$status"
