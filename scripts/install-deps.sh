#!/usr/bin/env bash
# Installs the Debian 12 packages DistOpt needs to build and test. Idempotent:
# does nothing when everything is already there.
set -euo pipefail
packages=(
  cmake ninja-build lld ccache g++ git python3 python3-venv python3-pip
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx python3-torch
  python3-torchvision
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev opencl-headers libgloo-dev libopenmpi-dev openmpi-bin
  valgrind chromium
)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "Installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
