#!/usr/bin/env python3
"""dist-modelgen's multi-head latent attention computes what
docs/modelgen.md says.

Writes small `dist-modelgen llama --kv-lora-rank` models (with a query
rank and without, dense and with experts), fills their weights with random
values, runs them in onnxruntime and compares the logits with a NumPy
forward pass of the same math: DeepSeek-V3's attention (low-rank query and
key/value projections with their RMSNorms, per-head split into the parts
without and with rotary embedding, one rotary key shared by every head,
scale 1/sqrt(nope + rope), values of their own width), SwiGLU or the MoE
FFN of check_moe_form.py. Exits 1 when they differ.

    .venv/bin/python test/numerics/check_mla_form.py --build build [--junit F]
"""
import argparse
import os
import sys
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import llama_form  # noqa: E402

S, B, H, HEADS, V = 8, 2, 32, 4, 50
NOPE, ROPE, VDIM, KV_RANK = 8, 4, 6, 16
E, K = 4, 2

CASES = {
    "mla_q_rank": ["--q-lora-rank", 12],
    "mla_no_q_rank": ["--q-lora-rank", 0],
    "mla_moe": ["--q-lora-rank", 12, "--experts", E, "--top-k", K,
                "--expert-ffn", 16, "--shared-experts", 1,
                "--dense-layers", 1],
}


def rotary(x, cos, sin):
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def mla(x, w, cos, sin):
    """DeepseekV3Attention of the normed x [B, S, h] (weights `w(name)`)."""
    b, s, _ = x.shape
    if any(n.endswith("q_a_proj.weight") for n in w.names):
        q = llama_form.rms_norm(x @ w("q_a_proj.weight"),
                                w("q_a_layernorm.weight"))
        q = q @ w("q_b_proj.weight")
    else:
        q = x @ w("q_proj.weight")
    q = q.reshape(b, s, HEADS, NOPE + ROPE).transpose(0, 2, 1, 3)
    q_nope, q_pe = q[..., :NOPE], q[..., NOPE:]
    kv = x @ w("kv_a_proj_with_mqa.weight")
    compressed, k_pe = kv[..., :KV_RANK], kv[..., KV_RANK:]
    kv = llama_form.rms_norm(compressed, w("kv_a_layernorm.weight"))
    kv = (kv @ w("kv_b_proj.weight")).reshape(b, s, HEADS, NOPE + VDIM)
    kv = kv.transpose(0, 2, 1, 3)
    k_nope, v = kv[..., :NOPE], kv[..., NOPE:]
    k_pe = rotary(k_pe[:, None], cos, sin)  # one key for every head
    q = np.concatenate([q_nope, rotary(q_pe, cos, sin)], -1)
    k = np.concatenate(
        [k_nope, np.broadcast_to(k_pe, (b, HEADS, s, ROPE))], -1)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(NOPE + ROPE)
    scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    c = (p @ v).transpose(0, 2, 1, 3).reshape(b, s, HEADS * VDIM)
    return c @ w("o_proj.weight")


def reference(weights, ids, layers, moe_from):
    """Logits of the generated LLaMA with latent attention."""
    def at(prefix):
        def w(suffix):
            return weights[prefix + suffix]
        w.names = [n for n in weights if n.startswith(prefix)]
        return w

    inv = 1.0 / 10000 ** (np.arange(0, ROPE, 2) / ROPE)
    freqs = np.arange(S)[:, None] * inv[None]
    emb = np.concatenate([freqs, freqs], -1)
    cos, sin = np.cos(emb), np.sin(emb)
    x = weights["model.embed_tokens.weight"][ids]
    for i in range(layers):
        w = at(f"model.layers.{i}.")
        x = x + mla(llama_form.rms_norm(x, w("input_layernorm.weight")),
                    at(f"model.layers.{i}.self_attn."), cos, sin)
        m = llama_form.rms_norm(x, w("post_attention_layernorm.weight"))
        if i >= moe_from:
            x = x + llama_form.moe(
                m, w("mlp.gate.weight"),
                [w("mlp.experts." + p)
                 for p in ("gate_proj", "up_proj", "down_proj")],
                [w("mlp.shared_experts." + p + ".weight")
                 for p in ("gate_proj", "up_proj", "down_proj")], K)
        else:
            x = x + llama_form.swiglu(
                m, *(w("mlp." + p + ".weight")
                     for p in ("gate_proj", "up_proj", "down_proj")))
    x = llama_form.rms_norm(x, weights["model.norm.weight"])
    return x @ weights["lm_head.weight"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--junit")
    args = ap.parse_args()
    t0 = time.time()
    results = []
    ids = np.random.default_rng(1).integers(0, V, size=(B, S))
    for name, extra in CASES.items():
        layers = 2
        m, w = llama_form.generate(
            args.build,
            ["--layers", layers, "--hidden", H, "--heads", HEADS,
             "--ffn-hidden", 64, "--seq", S, "--vocab", V,
             "--kv-lora-rank", KV_RANK, "--qk-nope-head-dim", NOPE,
             "--qk-rope-head-dim", ROPE, "--v-head-dim", VDIM,
             "--micro-batch", B] + extra, "mla-form")
        got, = ort.InferenceSession(m.SerializeToString()).run(
            ["logits"], {"input_ids": ids.astype(np.int64)})
        moe_from = 1 if "--experts" in extra else layers
        ref = reference(w, ids, layers, moe_from)
        err = float(np.abs(got - ref).max())
        scale = float(np.abs(ref).max())
        print(f"{name}: max |onnxruntime - NumPy| = {err:.3g} "
              f"(logits up to {scale:.3g})")
        ok = err <= 1e-5 * scale
        results.append((name + "_vs_numpy",) + (
            ("passed", "") if ok else
            ("failed", f"max |onnxruntime - NumPy| = {err:.3g} "
                       f"(limit 1e-5 x {scale:.3g})")))
    return common.finish("numerics.mla_form", results, args.junit,
                         time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
