#!/usr/bin/env bash
# The main job on the bundled example: import a GPT-2 (124M) graph, show what
# DistOpt sees in it, then predict what a plan for one DGX A100 node costs and
# draw its timeline.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
model=$root/examples/gpt2-124m.onnx
out=$build/example
mkdir -p "$out"

echo "== Importing $model (graph only: shapes, no weight bytes)"
"$bin/dist-opt" "$model" --dist-weights=ignore --input-shape=input_ids:1x1024 \
  -o "$out/gpt2.mlir"
echo "   wrote $out/gpt2.mlir ($(wc -l <"$out/gpt2.mlir") lines); its start:"
sed -n '1,10p' "$out/gpt2.mlir"
echo "   ..."

echo
echo "== Searching for the best training plan on one DGX A100 node (8 GPUs), global batch 64"
"$bin/dist-opt" "$out/gpt2.mlir" --dist-cluster=dgx-a100-80gb:1 --dist-batch=64 \
  --dist-search --dist-explain --dist-report="$out/search.json"

echo
echo "== Predicting a hand-written 4-stage pipeline plan for comparison (1F1B, 16 micro-batches)"
"$bin/dist-opt" "$out/gpt2.mlir" --dist-cluster=dgx-a100-80gb:1 \
  --dist-plan="dp=2,tp=1,pp=4,mbs=2,schedule=1f1b" --dist-batch=64 \
  --dist-simulate --dist-report="$out/report.json" \
  --dist-trace="$out/trace.json" --dist-timeline="$out/timeline.svg"
echo
echo "   search report: $out/search.json"
echo "   plan report:   $out/report.json"
echo "   trace:         $out/trace.json (open in https://ui.perfetto.dev)"
echo "   timeline:      $out/timeline.svg (open in a browser: one lane per stage, the bubble in grey)"
