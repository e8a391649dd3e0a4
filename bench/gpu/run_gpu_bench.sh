#!/usr/bin/env bash
# The GPU benchmark of issue 13: a GPT training step on one GPU (achieved
# TFLOP/s and MFU in bf16) and the inference set of bench/codegen on the
# GPU. Runs in well under 10 minutes on an H100/H200-class GPU.
#
#   bench/gpu/run_gpu_bench.sh BUILD [--compile-only]
#
# With --compile-only (what CI and machines without a GPU run) it builds
# every CUDA program with nvcc and stops: that checks the CUDA parts
# compile. Otherwise it runs them and prints one markdown table per part.
#
# Models (nothing downloaded):
# - train: dist-modelgen gpt, 8 layers, hidden 4096, 32 heads, sequence
#   2048, vocabulary 32000 (1.74B parameters: compute-bound on one GPU),
#   batch 4 (--micro-batch), weights by the graph-only rule
#   (--dist-weights=ignore); dist-compile --target=cuda --train with bf16
#   mixed precision and AdamW. Model FLOPs per step: 3x the forward matmuls.
# - inference: the ten models of bench/codegen/make_models.py when they
#   exist in BUILD/bench-models (the GPU machine cannot export them: copy
#   them there), each against onnxruntime's CUDA execution provider when
#   onnxruntime-gpu is importable by $PYTHON (else only DistOpt's time).
set -euo pipefail
build=${1:?usage: run_gpu_bench.sh BUILD [--compile-only]}
mode=${2:-run}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${DIST_GPU_BENCH_DIR:-$(mktemp -d /tmp/dist-gpu-bench.XXXXXX)}
PYTHON=${PYTHON:-python3}
dc=$build/bin/dist-compile
L=8 H=4096 NH=32 S=2048 V=32000 B=4

echo "== building the CUDA programs in $work"
$build/bin/dist-modelgen gpt --layers $L --hidden $H --heads $NH --seq $S \
  --vocab $V --micro-batch $B -o "$work/gpt_big.onnx"
train="loss=softmax-cross-entropy:labels optimizer=adamw lr=1e-4 mixed-precision=bf16"
compile_flag=""
[ "$mode" = "--compile-only" ] && compile_flag="--compile-only"
$dc "$work/gpt_big.onnx" --target=cuda --dist-weights=ignore \
  --train="$train" $compile_flag -o "$work/gpt_train_cuda.bin"
models=()
for m in gpt2 llama mistral bert vit whisper_enc resnet18 convnext efficientnet_b0 mobilenet_v3s; do
  [ -f "$build/bench-models/$m.onnx" ] || continue
  $dc "$build/bench-models/$m.onnx" --target=cuda $compile_flag -o "$work/$m.cuda.bin"
  models+=("$m")
done
if [ "$mode" = "--compile-only" ]; then
  echo "compiled (not run): gpt_train_cuda ${models[*]}"
  exit 0
fi

echo "== GPT training step (bf16, AdamW) on one GPU"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
"$PYTHON" - "$work" "$gpu" $L $H $S $V $B <<'PY'
import os, re, subprocess, sys
import numpy as np
work, gpu = sys.argv[1], sys.argv[2]
L, H, S, V, B = map(int, sys.argv[3:])
T = B * S
fwd = L * (2 * T * (H * 3 * H + H * H + 2 * H * 4 * H) + 4 * B * S * S * H) + 2 * T * H * V
step = 3 * fwd
peak = {"H100": 989e12, "H200": 989e12, "A100": 312e12}
p_peak = next((v for k, v in peak.items() if k in gpu), None)
rng = np.random.default_rng(0)
np.save(f"{work}/ids.npy", rng.integers(0, V, (B, S)).astype(np.int64))
np.save(f"{work}/labels.npy", rng.integers(0, V, (B, S)).astype(np.int64))
p = subprocess.run([f"{work}/gpt_train_cuda.bin", f"input_ids={work}/ids.npy",
                    f"labels={work}/labels.npy", "-o", work, "--steps", "6",
                    "--profile"], capture_output=True, text=True)
if p.returncode:
    sys.exit(p.stderr[-3000:])
ms = float(re.search(r"median of the others ([0-9.]+) ms", p.stderr).group(1))
tflops = step / (ms / 1e3) / 1e12
print("| GPU | model | s/step | model TFLOP/s | MFU (bf16 dense peak) |")
print("| --- | --- | ---: | ---: | ---: |")
mfu = f"{100 * tflops * 1e12 / p_peak:.1f}%" if p_peak else "n/a"
print(f"| {gpu} | GPT {L}x{H}, seq {S}, batch {B} | {ms / 1e3:.3f} | {tflops:.1f} | {mfu} |")
PY

echo "== inference on the GPU"
DIST_ROOT=$root "$PYTHON" - "$work" "$build" "${models[@]}" <<'PY'
import os, re, subprocess, sys, time, statistics
import numpy as np
work, build, models = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, os.path.join(os.environ["DIST_ROOT"], "bench", "codegen"))
from bench_inputs import make_inputs
try:
    import onnxruntime as ort
    cuda = "CUDAExecutionProvider" in ort.get_available_providers()
except ImportError:
    cuda = False
print("| model | DistOpt CUDA ms | onnxruntime CUDA EP ms | ratio |")
print("| --- | ---: | ---: | ---: |")
for m in models:
    path = f"{build}/bench-models/{m}.onnx"
    feeds, args, _ = make_inputs(path, work, prefix=m + ".")
    p = subprocess.run([f"{work}/{m}.cuda.bin"] + args + ["-o", work, "--repeat", "21",
                        "--profile"], capture_output=True, text=True)
    ms = float(re.search(r"median of the others ([0-9.]+) ms", p.stderr).group(1)) if p.returncode == 0 else float("nan")
    o = float("nan")
    if cuda:
        s = ort.InferenceSession(path, providers=["CUDAExecutionProvider"])
        s.run(None, feeds)
        ts = []
        for _ in range(20):
            t0 = time.perf_counter(); s.run(None, feeds); ts.append(time.perf_counter() - t0)
        o = statistics.median(ts) * 1e3
    print(f"| {m} | {ms:.2f} | {o:.2f} | {ms / o:.2f} |")
PY
