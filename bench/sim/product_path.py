#!/usr/bin/python3
"""Megatron-LM Table 1 and LLaMA-70B through the product path.

Each row: `dist-modelgen` writes the model as graph-only ONNX, `dist-opt`
imports it, derives the layers from the graph (passes/Planning/LayerAnalysis), and
simulates the plan the source states (`--dist-plan ... --dist-report`);
the throughput is computed from the report's iteration time the way each
source does (Megatron's FLOP formula, tokens/s/GPU for NeMo). Figures and
how to read them: docs/benchmarks.md ("Product path").

    /usr/bin/python3 bench/sim/product_path.py --build build
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# Megatron-LM Table 1 (Narayanan et al., SC'21): params (B), heads, hidden,
# layers, t, p, d, GPUs, batch, published TFLOP/s per GPU.
TABLE1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 32, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 32, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 32, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 32, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 32, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 24, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 15, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 9, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 6, 3072, 3072, 163),
]
SEQ, VOCAB = 2048, 51200


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + p.stderr)
    return time.perf_counter() - t0


def megatron_plan(layers, t, p, d):
    """bench/sim/MegatronRows.h's planOf: interleaved with 2 or 3 chunks
    where the per-stage block count allows, blocks split evenly. In the
    imported graph every block is two layers (attention, MLP) after the
    embedding layer, so block i starts at graph layer 1 + 2 i."""
    chunks = 1
    if p > 1:
        for v in (2, 3):
            if (layers // p) % v == 0 and chunks == 1:
                chunks = v
    spec = f"dp={d},tp={t},pp={p},mbs=1,recompute=full,p2p_overlap=0,grad_overlap=0"
    if chunks > 1:
        spec += f",schedule=interleaved,chunks={chunks}"
    V = p * chunks
    if V > 1:
        cuts = [1 + 2 * i * (layers // V) for i in range(1, V)]
        spec += ",stages=" + "/".join(map(str, cuts))
    return spec


def megatron_flops(batch, layers, h):
    """Megatron's FLOPs per iteration with full recomputation."""
    return 96 * batch * SEQ * layers * h * h * (
        1 + SEQ / (6 * h) + VOCAB / (16 * layers * h))


def tools(prefix):
    """--build's dist-modelgen and dist-opt, and a scratch directory."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    return (os.path.join(args.build, "bin", "dist-modelgen"),
            os.path.join(args.build, "bin", "dist-opt"),
            tempfile.mkdtemp(prefix=prefix))


DROPOUT = 0.1


def main():
    modelgen, opt, tmp = tools("dist-product-")
    print("Megatron-LM Table 1 on dgx-a100-80gb through dist-opt (imported "
          "ONNX from dist-modelgen gpt; predictions)")
    print(f"{'params':>7} {'t':>2} {'p':>3} {'d':>3} {'GPUs':>5} "
          f"{'published':>9} {'predicted':>9} {'error':>7} {'peak GiB':>8} "
          f"{'CLI s':>6}")
    errs = []
    for (pb, a, h, l, t, p, d, gpus, batch, pub) in TABLE1:
        onnx = os.path.join(tmp, f"gpt{pb}.onnx")
        # Megatron-LM trains with hidden and attention dropout 0.1 (its
        # defaults), as cost::buildGpt models them.
        run([modelgen, "gpt", "--layers", str(l), "--hidden", str(h),
             "--heads", str(a), "--seq", str(SEQ), "--vocab", str(VOCAB),
             "--dropout", str(DROPOUT), "-o", onnx])
        report = os.path.join(tmp, f"gpt{pb}.json")
        secs = run([opt, onnx, "--dist-weights=ignore",
                    f"--dist-cluster=dgx-a100-80gb:{gpus // 8}",
                    "--dist-plan=" + megatron_plan(l, t, p, d),
                    f"--dist-batch={batch}", f"--dist-report={report}",
                    "-o", os.devnull])
        est = json.load(open(report))["estimate"]
        tf = megatron_flops(batch, l, h) / est["iteration_time_s"] / gpus / 1e12
        err = (tf - pub) / pub
        errs.append(abs(err))
        peak = json.load(open(report))["estimate"][
            "max_peak_memory_bytes"] / 2**30
        print(f"{pb:>6}B {t:>2} {p:>3} {d:>3} {gpus:>5} {pub:>9} {tf:>9.1f} "
              f"{err * 100:>+6.1f}% {peak:>8.1f} {secs:>6.2f}")
    print(f"mean |error| {100 * sum(errs) / len(errs):.1f}%, worst "
          f"{100 * max(errs):.1f}%")

    # LLaMA-3 70B (80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672,
    # vocabulary 128256, sequence 8192) on DGX H100, BF16, fused attention:
    # DGX Cloud's recipe (64 GPUs, t4 p4 c2 v5, GBS 128; published step
    # 14.72 s = 1113 tokens/s/GPU) and the dp=2,tp=8,pp=4 layout.
    onnx = os.path.join(tmp, "llama70b.onnx")
    run([modelgen, "llama", "--layers", "80", "--hidden", "8192", "--heads",
         "64", "--kv-heads", "8", "--ffn-hidden", "28672", "--seq", "8192",
         "--vocab", "128256", "-o", onnx])
    print("\nLLaMA-3 70B on dgx-h100 through dist-opt (--dist-fused-attention; "
          "predictions)")
    rows = [
        ("DGXC t4 p4 c2 v5", 8, "dp=2,tp=4,pp=4,cp=2,sp=1,tp_overlap=1,"
         "zero=1,ag_overlap=1,mbs=1,schedule=interleaved,chunks=5", 128,
         128 * 8192 / 14.72 / 64),
        ("issue dp2 t8 p4 1f1b sp", 8, "dp=2,tp=8,pp=4,sp=1,zero=1,mbs=1,"
         "schedule=1f1b", 128, None),
    ]
    for (name, nodes, plan, gbs, pub) in rows:
        report = os.path.join(tmp, "llama70b.json")
        secs = run([opt, onnx, "--dist-weights=ignore",
                    f"--dist-cluster=dgx-h100:{nodes}", "--dist-fused-attention",
                    "--dist-plan=" + plan, f"--dist-batch={gbs}",
                    f"--dist-report={report}", "-o", os.devnull])
        rep = json.load(open(report))
        est = rep["estimate"]
        tok = gbs * 8192 / est["iteration_time_s"] / (nodes * 8)
        peak = est["max_peak_memory_bytes"] / 2**30
        line = (f"{name:<24} tokens/s/GPU {tok:7.0f}  TFLOP/s/GPU "
                f"{est['model_tflops_per_device']:6.1f} (model)  peak "
                f"{peak:5.1f} GiB  CLI {secs:.2f} s")
        if pub:
            line += f"  published {pub:.0f} ({(tok - pub) / pub * 100:+.1f}%)"
        print(line)


if __name__ == "__main__":
    main()
