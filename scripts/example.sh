#!/usr/bin/env bash
# The main job on the bundled example: import a GPT-2 (124M) graph and show
# what DistOpt sees in it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
model=$root/examples/gpt2-124m.onnx
out=$build/example
mkdir -p "$out"

echo "== Importing $model (graph only: shapes, no weight bytes)"
"$bin/dist-opt" "$model" --dist-weights=ignore --input-shape=input_ids:8x1024 \
  -o "$out/gpt2.mlir"
echo "   wrote $out/gpt2.mlir ($(wc -l <"$out/gpt2.mlir") lines); its start:"
sed -n '1,12p' "$out/gpt2.mlir"
echo "   ..."
echo "== Operations in the imported graph"
"$bin/dist-opt" "$out/gpt2.mlir" --print-op-stats -o /dev/null 2>&1 | sed -n '1,40p'
