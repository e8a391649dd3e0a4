"""dist-modelgen's LLaMA forms (docs/modelgen.md) in NumPy, and the model
files the form checks run in onnxruntime: check_moe_form.py (the
mixture-of-experts FFN) and check_mla_form.py (multi-head latent
attention) share them.
"""
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def generate(build, options, prefix, seed=0):
    """`dist-modelgen llama OPTIONS` with random weights (std 0.3) in
    place of the graph-only ones: (model, {weight name: array})."""
    path = os.path.join(tempfile.mkdtemp(prefix=prefix + "-"), "m.onnx")
    subprocess.run([os.path.join(build, "bin", "dist-modelgen"), "llama"] +
                   [str(o) for o in options] + ["-o", path], check=True,
                   stdout=subprocess.DEVNULL)
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    rng = np.random.default_rng(seed)
    w = {t.name: (rng.standard_normal(list(t.dims)) * 0.3).astype(np.float32)
         for t in g.initializer}
    del g.initializer[:]
    g.initializer.extend(numpy_helper.from_array(a, n) for n, a in w.items())
    return m, w


def silu(z):
    return z / (1 + np.exp(-z))


def rms_norm(x, weight, eps=1e-5):
    return weight * x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)


def swiglu(x, gate, up, down):
    return (silu(x @ gate) * (x @ up)) @ down


def moe(x, gate_w, experts, shared, top_k):
    """The MoE FFN of x [B, S, h]: softmax router over gate_w [h, E], each
    token's top_k weights, each expert taking its C = top_k S / E
    highest-weighted tokens (capacity factor 1), SwiGLU experts (stacked
    gate, up, down), weighted sum, plus the shared experts' SwiGLU
    (`shared`: its three weights, or None)."""
    gate, up, down = experts
    B, S, _ = x.shape
    E = gate.shape[0]
    cap = top_k * S // E
    out = np.zeros_like(x)
    for b in range(B):
        logits = x[b] @ gate_w
        p = np.exp(logits - logits.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        gates = np.zeros_like(p)
        for s in range(S):
            top = np.argsort(-p[s])[:top_k]
            gates[s, top] = p[s, top]
        for e in range(E):
            for s in np.argsort(-gates[:, e], kind="stable")[:cap]:
                if gates[s, e] > 0:
                    out[b, s] += gates[s, e] * swiglu(x[b, s], gate[e],
                                                      up[e], down[e])
        if shared is not None:
            out[b] += swiglu(x[b], *shared)
    return out
