#!/usr/bin/env bash
# The GPU check of issue 13 on a machine that has both the DistOpt build and
# a GPU: make_bundle.py (CUDA programs, CPU references) then run_bundle.py
# (CUDA programs against the CPU programs, the GPT training step's TFLOP/s
# and MFU beside PyTorch's, the inference set against onnxruntime's CUDA
# provider). For a GPU machine without the toolchain, run the two halves
# apart and carry BUNDLE.tar.xz (docs/benchmarks.md, "GPU").
#
#   bench/gpu/run_gpu_bench.sh BUILD [--compile-only]
#
# With --compile-only (machines without a GPU) it builds the bundle and
# stops: that checks every CUDA program of the check compiles and links.
set -euo pipefail
build=${1:?usage: run_gpu_bench.sh BUILD [--compile-only]}
mode=${2:-run}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${DIST_GPU_BENCH_DIR:-$(mktemp -d /tmp/dist-gpu-bench.XXXXXX)}
PYTHON=${PYTHON:-$root/.venv/bin/python}
"$PYTHON" "$root/bench/gpu/make_bundle.py" "$build" "$work/bundle" --with-models
[ "$mode" = "--compile-only" ] && { echo "built (not run): $work/bundle"; exit 0; }
"$PYTHON" "$root/bench/gpu/run_bundle.py" "$work/bundle" --root "$root" --out "$work/logs"
