#!/usr/bin/env bash
# Installs the Debian packages ironlaw needs, only those that are missing.
# Safe to run repeatedly; needs root (or sudo) only when something is missing.
set -euo pipefail
packages=(build-essential cmake pkg-config libboost-graph-dev libboost-program-options-dev
          libyaml-cpp-dev libhdf5-dev hdf5-tools catch2
          librsvg2-bin  # rsvg-convert: the plot tests render every SVG with it
          clang-14 libclang-rt-14-dev  # clang and its runtimes: libFuzzer, ASan, UBSan (make fuzz)
          libboost-mpi-dev openmpi-bin libopenmpi-dev)  # ironlaw-mpi: sweep over MPI ranks
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing missing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
