#!/usr/bin/python3
"""Megatron-Bridge's mixture-of-experts rows through the product path.

Each row: `dist-modelgen llama --experts ...` writes the model as graph-only
ONNX (docs/modelgen.md: router, TopK, dispatch, stacked experts, combine),
`dist-opt` imports it, recognizes the MoE blocks in the layer analysis
(passes/Planning/Experts.cpp) and simulates the row's published layout
(bench/sim/PublishedRows.h's planOf: sp and tp_overlap where tp > 1, ZeRO-1
with overlapped parameter gathers, ep folded over tp where it exceeds dp,
interleaved stages split as Megatron-core splits them); tokens/s/GPU come
from the report's iteration time. Every figure is a **prediction**;
nothing is fitted here. The analytic column is `dist-bench-sim`'s figure
for the same row (docs/benchmarks.md). DeepSeek-V3 is written with its
multi-head latent attention (`--kv-lora-rank 512 --q-lora-rank 1536`, heads
of 128 + 64 and 128; without the multi-token prediction module).

    /usr/bin/python3 bench/sim/product_path_moe.py --build build
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from product_path import run, tools  # noqa: E402  (shared with Table 1)

# name, dist-modelgen llama options, blocks.
MODELS = {
    "qwen3-30b-a3b": (["--layers", "48", "--hidden", "2048", "--heads", "32",
                       "--kv-heads", "4", "--head-dim", "128",
                       "--ffn-hidden", "6144", "--vocab", "151936",
                       "--experts", "128", "--top-k", "8",
                       "--expert-ffn", "768"], 48),
    "qwen3-235b-a22b": (["--layers", "94", "--hidden", "4096", "--heads",
                         "64", "--kv-heads", "4", "--head-dim", "128",
                         "--ffn-hidden", "12288", "--vocab", "151936",
                         "--experts", "128", "--top-k", "8",
                         "--expert-ffn", "1536"], 94),
    "deepseek-v3": (["--layers", "61", "--hidden", "7168", "--heads", "128",
                     "--ffn-hidden", "18432", "--vocab", "129280",
                     "--experts", "256", "--top-k", "8", "--expert-ffn",
                     "2048", "--shared-experts", "1", "--dense-layers", "3",
                     "--q-lora-rank", "1536", "--kv-lora-rank", "512",
                     "--qk-nope-head-dim", "128", "--qk-rope-head-dim", "64",
                     "--v-head-dim", "128"], 61),
}

# bench/sim/PublishedRows.h's Megatron-Bridge MoE rows (DGX H100, FP8):
# release, model, GPUs, GBS, tp, pp, vp, ep, published tokens/s/GPU, the
# analytic bench's prediction (docs/benchmarks.md's accuracy table).
ROWS = [
    ("26.04.01", "qwen3-30b-a3b", 16, 1024, 1, 1, 1, 16, 8960, 8649),
    ("26.02.01", "qwen3-30b-a3b", 16, 1024, 1, 2, 12, 8, 9058, 15276),
    ("26.04.01", "qwen3-235b-a22b", 256, 8192, 2, 8, 4, 32, 1712, 1441),
    ("25.11", "qwen3-235b-a22b", 256, 2048, 2, 8, 4, 32, 1575, 1427),
    ("25.09", "deepseek-v3", 1024, 8192, 2, 8, 4, 64, 1297, 948),
]
SEQ = 4096


def plan_of(gpus, tp, pp, vp, ep, blocks):
    """PublishedRows.h's planOf for the imported graph, whose block b
    starts at graph layer 1 + 2 b (attention and FFN halves)."""
    dp = gpus // (tp * pp)
    ep = ep if ep <= dp else ep // tp
    spec = f"dp={dp},tp={tp},pp={pp},ep={ep},mbs=1,zero=1,ag_overlap=1"
    if tp > 1:
        spec += ",sp=1,tp_overlap=1"
    if vp > 1:
        spec += f",schedule=interleaved,chunks={vp}"
    V = pp * vp
    cuts = []
    if V > 1 and blocks % V == 0:
        cuts = [1 + 2 * i * (blocks // V) for i in range(1, V)]
    elif V > 1 and (blocks + 2) % V == 0:
        # The embedding and the loss count as one block each: analytic
        # layer c = i (L + 2) / V starts block c - 1.
        cuts = [2 * (i * ((blocks + 2) // V)) - 1 for i in range(1, V)]
    if cuts:
        spec += ",stages=" + "/".join(map(str, cuts))
    return spec


def main():
    modelgen, opt, tmp = tools("dist-product-moe-")
    for name, (opts, _) in MODELS.items():
        onnx = os.path.join(tmp, name.split()[0] + ".onnx")
        run([modelgen, "llama", "--seq", str(SEQ)] + opts + ["-o", onnx])
    print("Megatron-Bridge MoE rows on dgx-h100 through dist-opt (imported "
          "ONNX from dist-modelgen llama --experts; FP8 matmuls, fused "
          "attention; predictions)")
    print(f"{'release':<9} {'model':<18} {'GPUs':>5} {'GBS':>5} "
          f"{'layout':<16} {'published':>9} {'product':>8} {'error':>7} "
          f"{'analytic':>8} {'peak GiB':>8} {'CLI s':>6}")
    for (rel, name, gpus, gbs, tp, pp, vp, ep, pub, analytic) in ROWS:
        onnx = os.path.join(tmp, name.split()[0] + ".onnx")
        report = os.path.join(tmp, "report.json")
        plan = plan_of(gpus, tp, pp, vp, ep, MODELS[name][1])
        secs = run([opt, onnx, "--dist-weights=ignore",
                    f"--dist-cluster=dgx-h100:{max(1, gpus // 8)}",
                    "--dist-dtype=fp8", "--dist-fused-attention",
                    "--dist-plan=" + plan, f"--dist-batch={gbs}",
                    f"--dist-report={report}", "-o", os.devnull])
        est = json.load(open(report))["estimate"]
        tok = gbs * SEQ / est["iteration_time_s"] / gpus
        peak = est["max_peak_memory_bytes"] / 2**30
        layout = f"t{tp} p{pp}" + (f" v{vp}" if vp > 1 else "") + f" e{ep}"
        print(f"{rel:<9} {name:<18} {gpus:>5} {gbs:>5} {layout:<16} "
              f"{pub:>9} {tok:>8.0f} {(tok - pub) / pub * 100:>+6.1f}% "
              f"{analytic:>8} {peak:>8.1f} {secs:>6.2f}")


if __name__ == "__main__":
    main()
