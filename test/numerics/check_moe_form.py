#!/usr/bin/env python3
"""dist-modelgen's mixture-of-experts form computes what docs/modelgen.md says.

Writes a small `dist-modelgen llama --experts` model, fills its weights with
random values, runs it in onnxruntime with the MoE block's input and output
as extra graph outputs, and compares that output with a NumPy MoE: softmax
router, top-k weights, each expert taking its C = k S / E highest-weighted
tokens, SwiGLU experts, weighted sum, plus the shared expert. Exits 1 when
they differ.

    .venv/bin/python test/numerics/check_moe_form.py --build build [--junit F]
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import llama_form  # noqa: E402

E, K, S, B = 4, 2, 8, 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--junit")
    args = ap.parse_args()
    t0 = time.time()
    m, w = llama_form.generate(
        args.build, ["--layers", 1, "--hidden", 32, "--heads", 4,
                     "--kv-heads", 2, "--ffn-hidden", 64, "--seq", S,
                     "--vocab", 50, "--experts", E, "--top-k", K,
                     "--expert-ffn", 16, "--shared-experts", 1,
                     "--micro-batch", B], "moe-form")
    g = m.graph
    rng = np.random.default_rng(1)
    router = next(n for n in g.node if n.op_type == "MatMul" and
                  any(i.endswith("mlp.gate.weight") for i in n.input))
    combine = next(n for n in g.node if n.op_type == "ScatterElements" and
                   any(a.name == "reduction" for a in n.attribute))
    out = next(n for n in g.node
               if n.op_type == "Add" and combine.output[0] in n.input)
    for v in (router.input[0], out.output[0]):
        g.output.append(helper.make_tensor_value_info(
            v, onnx.TensorProto.FLOAT, None))
    ids = rng.integers(0, 50, size=(B, S)).astype(np.int64)
    x, got = ort.InferenceSession(m.SerializeToString()).run(
        [router.input[0], out.output[0]], {"input_ids": ids})

    def weight(suffix):
        return next(a for n, a in w.items() if n.endswith(suffix))

    ref = llama_form.moe(
        x, weight("mlp.gate.weight"),
        [weight("experts." + p) for p in ("gate_proj", "up_proj", "down_proj")],
        [weight("shared_experts." + p + ".weight")
         for p in ("gate_proj", "up_proj", "down_proj")], K)
    err = float(np.abs(got - ref).max())
    print(f"MoE block: max |onnxruntime - NumPy| = {err:.3g} "
          f"(outputs up to {float(np.abs(ref).max()):.3g})")
    status = ("passed", "") if err < 1e-5 else (
        "failed", f"max |onnxruntime - NumPy| = {err:.3g} (limit 1e-5)")
    return common.finish("numerics.moe_form", [("moe_form_vs_numpy",) + status],
                         args.junit, time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
