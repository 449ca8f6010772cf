#!/usr/bin/env bash
# Packs what a GPU machine without this project's Debian packages needs to run the validator:
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]      (defaults: build, build-gpurt)
# BUNDLE_DIR/cli/stripesim, the GPU backends' module it loads (lib/stripesim/, where the
# executable looks for it, ../lib/stripesim from its folder), tests/stripesim_validate_gpu_tests
# and bench/bench_kernel_gpu, stripped, and in BUNDLE_DIR/lib every shared library they load that
# such a machine may lack (fmt, OpenMPI and what it loads). Left out: the C and C++ runtimes, and
# CUDA's, cuBLAS's and NCCL's own libraries, which the GPU machine's driver, toolkit or PyTorch
# packages provide (scripts/gpu-session.sh puts them on LD_LIBRARY_PATH). `build-*/` is ignored by
# git, so a device call carries the bundle by naming it (`carry: build-gpurt`).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
bundle="${2:-build-gpurt}"
binaries=(cli/stripesim lib/stripesim/libstripesim_gpu_backends.so tests/stripesim_validate_gpu_tests bench/bench_kernel_gpu)
for b in "${binaries[@]}"; do
  [[ -x "$build/$b" ]] || { echo "gpu-bundle.sh: $build/$b not found (configure with CUDA and build it)" >&2; exit 1; }
done
rm -rf "$bundle"
mkdir -p "$bundle/lib"
# The machine's own: the loader, the C and C++ runtimes, and every CUDA, cuBLAS and NCCL library.
provided='^(linux-vdso|ld-linux|libc\.|libm\.|libpthread\.|libdl\.|librt\.|libgcc_s\.|libstdc\+\+\.|libcuda\.|libcudart\.|libcublas|libnccl\.|libnvidia)'
for b in "${binaries[@]}"; do
  mkdir -p "$bundle/$(dirname "$b")"
  strip -o "$bundle/$b" "$build/$b"
  # ldd lists what the binary loads, transitively; "name => path (address)" for each found one.
  ldd "$build/$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $provided ]] || cp -L -n "$path" "$bundle/lib/$name"
  done
done
du -sh "$bundle" | awk '{print "gpu-bundle.sh: " $1 " in " $2 " (a device call carries 64 MiB at most)"}'
ls "$bundle/lib"
