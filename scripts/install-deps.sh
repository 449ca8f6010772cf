#!/usr/bin/env bash
# Installs, from Debian's packages, whatever stripesim's build needs and this machine lacks.
# Uses sudo when not root. Safe to run again: it installs nothing when everything is present.
set -euo pipefail

packages=(
  cmake g++ make
  libcli11-dev nlohmann-json3-dev libfmt-dev libboost-graph-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-jsonschema librsvg2-bin
  openmpi-bin libopenmpi-dev
)
# --fuzz: also clang and its runtime (libFuzzer, sanitizers) for scripts/fuzz.sh.
if [ "${1:-}" = "--fuzz" ]; then packages+=(clang libclang-rt-14-dev); fi

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all build dependencies present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
