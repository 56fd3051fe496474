#!/bin/bash
# Installs what turnip needs to build and test on Debian 12 (run as root). Skips apt-get
# when everything is already there.
# usage: scripts/install-deps.sh [--bench]
#   --bench: also what the benchmarks compare against and CI does not need (StarPU 1.3 for
#   build/bench_dispatch; the CMake option pkg_check_modules(STARPU) picks it up on reconfigure)
set -euo pipefail
pkgs=(build-essential cmake pkg-config libjansson-dev libopenblas-dev python3 python3-numpy python3-torch graphviz gnuplot-nox libglpk-dev
      clang libclang-rt-14-dev)
for a in "$@"; do
    case "$a" in
    --bench) pkgs+=(libstarpu-dev) ;;
    *) echo "usage: $0 [--bench]" >&2; exit 2 ;;
    esac
done
missing=()
for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
