#!/usr/bin/env python3
"""Training through generated programs vs a NumPy reference.

`dist-compile --train=...` runs dist-autodiff and builds @train_step; the
program runs 20 steps on one fixed batch (--steps 20) printing the loss of
every step and saves the final weights and optimizer state
(--save-state). A NumPy float64 reference with the same initial weights
(read from the model's weight file), data and optimizer formulas
(PyTorch's, as graph.sgd_update / graph.adam_update define them) must give
the same loss curve and end weights within 1e-4 relative.

Cases: the MLP fixture (x[4,8] -> 16 relu -> 4, MSE loss) with SGD,
SGD + momentum, Adam, and SGD with gradient accumulation over 2
micro-batches; SGD with bf16 and fp16 mixed precision (looser tolerance,
see MIXED) and fp16 with an overflowing loss scale (skipped steps, scale
backoff); the 2-layer GPT-2 with Adam in bf16 and fp16 against its fp32
program's curve.

CNNs with InstanceNormalization and Tile and with transposed convolutions
and a nearest Resize (run_networks.py) and the T5 and wav2vec2 fixtures
have the onnxruntime loss, finite-difference gradient and Adam checks, and
so do a CNN with LRN and one with ScatterElements/ScatterND (reduction
mul), which also trains 20 SGD and Adam steps against PyTorch. A
linear classifier ending in LogSoftmax and NegativeLogLikelihoodLoss
(class weights, ignore_index) trains 20 SGD steps against NumPy float64.

The 2-layer GPT-2 fixture, a small ResNet (training-mode batch norm) and
a dist-modelgen LLaMA with a mixture-of-experts layer (run_networks'
moe_llama: TopK routing, GatherElements dispatch, ScatterElements
combine) train 20 steps with SGD and with Adam against PyTorch: torch_reference.py
runs the same ONNX graph, weights and batch in float64 with torch.autograd
and torch.optim (under Debian's python3-torch), and the loss curve and end
weights must agree within 1e-4 relative. Where the float64 run passes a
ReLU kink or max-pool tie closer than float32 round-off, the program may
take the other branch: it must then match the float64 run forced onto that
branch, to the same 1e-4 (other_branches). They also keep their onnxruntime
loss check and finite-difference gradient checks.

    .venv/bin/python test/numerics/run_training.py --build build --junit out.xml
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "test", "fixtures", "small", "mlp_external.onnx")
WEIGHTS = os.path.join(ROOT, "test", "fixtures", "small", "mlp_external.weights")
STEPS = 20

CASES = {
    "sgd": ("optimizer=sgd lr=0.1", dict(kind="sgd", lr=0.1, momentum=0.0)),
    "momentum": ("optimizer=momentum lr=0.05 momentum=0.9",
                 dict(kind="sgd", lr=0.05, momentum=0.9)),
    "adam": ("optimizer=adam lr=0.01", dict(kind="adam", lr=0.01, b1=0.9,
                                            b2=0.999, eps=1e-8)),
    # Two micro-batches (the same batch twice) per step: @train_microbatch
    # twice, then @train_apply; the averaged gradient equals plain SGD's.
    "sgd_accumulate2": ("optimizer=sgd lr=0.1 accumulation-steps=2",
                        dict(kind="sgd", lr=0.1, momentum=0.0)),
}


def train_program(compiler, model, train, feeds, stem, outdir, extra=(), save=True):
    """Compiles `model` with --train="TRAIN" (and `extra` flags), runs STEPS
    steps on `feeds` and, with `save`, saves the end state in `outdir`.
    Returns (the STEPS losses, None) or (None, what went wrong)."""
    exe = outdir + ".bin"
    p = subprocess.run([compiler, model, f"--train={train}", "-o", exe] + list(extra),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, "dist-compile: " + p.stderr[-1500:]
    run_extra = ["--steps", str(STEPS)] + (["--save-state", outdir] if save else [])
    rc, text = common.run_program(exe, stem, feeds, outdir, extra=run_extra)
    if rc != 0:
        return None, text[-1500:]
    curve = np.array([float(m.group(1)) for m in
                      re.finditer(r"^step \d+ loss (\S+)", text, re.M)])
    if len(curve) != STEPS:
        return None, f"expected {STEPS} loss lines, got {len(curve)}"
    return curve, None


def mlp_reference(x, t, opt):
    raw = np.fromfile(WEIGHTS, dtype="<f4")
    w = {"w1": raw[0:128].reshape(8, 16).astype(np.float64),
         "b1": raw[128:144].astype(np.float64),
         "w2": raw[144:208].reshape(16, 4).astype(np.float64)}
    state = {k: {"m": np.zeros_like(v), "v": np.zeros_like(v)} for k, v in w.items()}
    x = x.astype(np.float64)
    t = t.astype(np.float64)
    losses = []
    for step in range(1, STEPS + 1):
        h_pre = x @ w["w1"] + w["b1"]
        h = np.maximum(h_pre, 0)
        y = h @ w["w2"]
        d = y - t
        losses.append(np.mean(d * d))
        dy = 2 * d / d.size
        g = {"w2": h.T @ dy}
        dh = (dy @ w["w2"].T) * (h_pre > 0)
        g["w1"] = x.T @ dh
        g["b1"] = dh.sum(0)
        for k in w:
            s = state[k]
            if opt["kind"] == "sgd":
                gk = g[k]
                if opt["momentum"]:
                    s["m"] = gk if step == 1 else opt["momentum"] * s["m"] + gk
                    gk = s["m"]
                w[k] = w[k] - opt["lr"] * gk
            else:
                s["m"] = opt["b1"] * s["m"] + (1 - opt["b1"]) * g[k]
                s["v"] = opt["b2"] * s["v"] + (1 - opt["b2"]) * g[k] ** 2
                mh = s["m"] / (1 - opt["b1"] ** step)
                vh = s["v"] / (1 - opt["b2"] ** step)
                w[k] = w[k] - opt["lr"] * mh / (np.sqrt(vh) + opt["eps"])
    return np.array(losses), w


# Mixed precision (SGD lr=0.1, f32 master weights, 16-bit forward and
# backward): the curve must follow the float64 reference within a tolerance
# set by the 16-bit format's unit roundoff u (bf16 2^-9, fp16 2^-12). Each
# step rounds x, the weights, activations and gradients once each (products
# accumulate in f32), so the loss, a square of outputs of two chained
# matmuls, carries a relative error of a few tens of u; the master weights
# are f32, so the error does not compound across 20 steps. 64u: bf16 0.125,
# fp16 0.0156, both far above the fp32 cases' 1e-4, both far below the
# loss's 20-step change (~60%).
# fp16 starts at loss scale 1024 (dynamic): the default 65536 overflows on
# the first steps of this batch (loss ~80), which the overflow case checks.
MIXED = {"bf16": 64 * 2.0 ** -9, "fp16": 64 * 2.0 ** -12}
MIXED_FLAGS = {"bf16": "mixed-precision=bf16",
               "fp16": "mixed-precision=fp16 loss-scale=1024"}
# Dynamic loss scaling: 2^20 overflows fp16 (max 65504) in the backward, so
# the first steps must be skipped (loss unchanged) and the scale halved on
# each (growth interval 2000 not reached): final scale = 2^20 * 0.5^skips.
HUGE_SCALE = 2.0 ** 20


def mixed_precision_checks(compiler, work, x, t):
    results = []
    want, _ = mlp_reference(x, t, dict(kind="sgd", lr=0.1, momentum=0.0))

    def train(case, flags):
        outdir = os.path.join(work, case)
        got, err = train_program(compiler, MLP, f"loss=mse:target optimizer=sgd lr=0.1 {flags}",
                                 [("x", x), ("target", t)], "mlp_external", outdir,
                                 ["--input-shape=x:4x8"])
        return got, outdir, err

    for mp, tol in MIXED.items():
        case = f"mlp_sgd_{mp}"
        got, _, err = train(case, MIXED_FLAGS[mp])
        if err is None:
            rel = np.max(np.abs(got - want) / np.abs(want))
            if rel > tol:
                err = f"loss curve: max relative error {rel:.2e} > {tol:.2e}"
            elif not got[-1] < 0.7 * got[0]:
                err = f"loss does not fall: {got[0]:.5f} -> {got[-1]:.5f}"
            print(f"{'ok  ' if not err else 'FAIL'} {case}: loss {got[0]:.5f} -> "
                  f"{got[-1]:.5f}, curve max rel err {rel:.1e} (tolerance {tol:.1e})"
                  + (f"; {err}" if err else ""))
        else:
            print(f"FAIL {case}: {err}")
        results.append((case, "failed" if err else "passed", err or ""))

    case = "mlp_sgd_fp16_overflow"
    got, outdir, err = train(case, f"mixed-precision=fp16 loss-scale={int(HUGE_SCALE)}")
    if err is None:
        skips = 0
        while skips + 1 < STEPS and got[skips + 1] == got[0]:
            skips += 1
        scale = float(np.load(os.path.join(outdir, "loss_scale.npy")).reshape(-1)[0])
        rel = np.max(np.abs(got[skips:] - want[:STEPS - skips]) / np.abs(want[:STEPS - skips]))
        if skips == 0:
            err = "no step was skipped with a loss scale that overflows fp16"
        elif scale != HUGE_SCALE * 0.5 ** skips:
            err = f"loss scale {scale:g} after {skips} skipped steps"
        elif rel > MIXED["fp16"]:
            err = (f"after {skips} skipped steps the curve leaves the reference "
                   f"(max rel err {rel:.2e})")
        print(f"{'ok  ' if not err else 'FAIL'} {case}: {skips} steps skipped, loss "
              f"scale 2^20 -> {scale:g}, then loss {got[skips]:.5f} -> {got[-1]:.5f} "
              f"(max rel err {rel:.1e} vs the reference shifted by {skips})"
              + (f"; {err}" if err else ""))
    else:
        print(f"FAIL {case}: {err}")
    results.append((case, "failed" if err else "passed", err or ""))
    return results


GPT2 = os.path.join(ROOT, "test", "fixtures", "gpt2.onnx")


def gpt2_checks(compiler, work):
    rng = np.random.default_rng(3)
    feeds = [("input_ids", rng.integers(0, 512, (1, 32)).astype(np.int64)),
             ("labels", rng.integers(0, 512, (1, 32)).astype(np.int64))]
    # eps 3e-3: the shared LayerNorm bias (twelve uses) curves the loss
    # enough that eps 1e-2 costs ~1.5% of truncation error along the
    # gradient; at 3e-3 f32 round-off of the loss (~4e-7 / 6e-3) still
    # stays far below the 2% tolerance.
    return network_checks(compiler, work, "gpt2", GPT2, feeds, [], None, rng, eps=3e-3)


def gpt2_mixed_checks(compiler, work):
    """GPT-2 (2 layers) Adam lr 1e-3 for 20 steps in fp32, bf16 and fp16
    (dynamic loss scale 65536): each 16-bit curve must follow the fp32
    program's within the MIXED tolerance and fall monotonically."""
    rng = np.random.default_rng(3)
    feeds = [("input_ids", rng.integers(0, 512, (1, 32)).astype(np.int64)),
             ("labels", rng.integers(0, 512, (1, 32)).astype(np.int64))]
    curves, results = {}, []
    for mp in ("none", "bf16", "fp16"):
        curve, err = train_program(
            compiler, GPT2, "loss=softmax-cross-entropy:labels optimizer=adam lr=0.001 "
            f"mixed-precision={mp}", feeds, "gpt2", os.path.join(work, f"gpt2_{mp}"),
            save=False)
        curves[mp] = curve if err is None else err
    for mp in ("bf16", "fp16"):
        case, got, ref = f"gpt2_adam_{mp}", curves.get(mp), curves.get("none")
        if isinstance(ref, str) or isinstance(got, str):
            err = got if isinstance(got, str) else "fp32 run: " + ref
            print(f"FAIL {case}: {err}")
        else:
            # A step whose scaled fp16 gradients overflow is skipped (the
            # loss repeats) and the scale halves: GPT-2's LayerNorm bias,
            # one weight behind twelve uses, overflows at 65536 on step 1.
            # The rest of the curve then follows fp32's, shifted by the skips.
            skips = 0
            while skips + 1 < STEPS and got[skips + 1] == got[0]:
                skips += 1
            rel = np.max(np.abs(got[skips:] - ref[:STEPS - skips]) / np.abs(ref[:STEPS - skips]))
            err = None
            if rel > MIXED[mp]:
                err = f"max relative error {rel:.2e} vs fp32 > {MIXED[mp]:.2e}"
            elif not all(b < a for a, b in zip(got[skips:], got[skips + 1:])):
                err = "loss not monotone"
            elif skips > 3:
                err = f"{skips} steps skipped for overflow"
            print(f"{'ok  ' if not err else 'FAIL'} {case}: loss {got[0]:.4f} -> {got[-1]:.4f}, "
                  f"{skips} overflowed steps skipped, max rel err vs fp32 {rel:.1e} "
                  f"(tolerance {MIXED[mp]:.1e})" + (f"; {err}" if err else ""))
        results.append((case, "failed" if err else "passed", err or ""))
    return results


def classifier_checks(compiler, work, name, image_shape, seed, **kwargs):
    """network_checks on run_networks.py's image classifier `name` (its
    builder function), batch 4, 10 classes."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run_networks
    path = os.path.join(work, name + ".onnx")
    getattr(run_networks, name)(path)
    rng = np.random.default_rng(seed)
    feeds = [("image", rng.standard_normal((4,) + image_shape).astype(np.float32)),
             ("labels", rng.integers(0, 10, (4,)).astype(np.int64))]
    return network_checks(compiler, work, name, path, feeds,
                          ["--default-batch=4"], rng=rng, **kwargs)


def upsampling_checks(compiler, work):
    """run_networks.py's CNN that upsamples with transposed convolutions and
    a nearest Resize: the onnxruntime loss, finite-difference gradient and
    Adam checks."""
    return classifier_checks(compiler, work, "upsampling_net", (3, 8, 6), 7,
                             exclude=None, eps=3e-3)


def gather_elements_checks(compiler, work):
    """run_networks.py's CNN that picks feature-map positions with
    GatherElements (repeated and negative indices): the onnxruntime loss,
    finite-difference gradient and Adam checks."""
    return classifier_checks(compiler, work, "gather_elements_net", (4, 6, 6),
                             9, exclude=None, eps=3e-3)


def scatter_checks(compiler, work, rtol):
    """run_networks.py's CNN that multiplies factors into its map with
    ScatterElements and ScatterND (reduction mul; repeated and negative
    indices): the onnxruntime loss, finite-difference gradient and Adam
    checks, and 20 SGD and Adam steps against PyTorch (scatter_reduce
    'prod' with include_self)."""
    results = classifier_checks(compiler, work, "scatter_net", (4, 6, 6), 11,
                                exclude=None, eps=3e-3)
    rng = np.random.default_rng(12)
    feeds = [("image", rng.standard_normal((4, 4, 6, 6)).astype(np.float32)),
             ("labels", rng.integers(0, 10, (4,)).astype(np.int64))]
    return results + torch_checks(compiler, work, "scatter_net",
                                  os.path.join(work, "scatter_net.onnx"), feeds,
                                  ["--default-batch=4"], None, rtol)


def lrn_checks(compiler, work):
    """run_networks.py's AlexNet-style CNN with LRN (windows of 5 and 3):
    the onnxruntime loss, finite-difference gradient and Adam checks."""
    return classifier_checks(compiler, work, "lrn_net", (3, 6, 6), 13,
                             exclude=None, eps=3e-3)


def resize_checks(compiler, work):
    """run_networks.py's CNN with bilinear, bicubic and 1-D linear Resize
    (constant interpolation matrices): the onnxruntime loss,
    finite-difference gradient and Adam checks."""
    return classifier_checks(compiler, work, "resize_net", (3, 6, 4), 10,
                             exclude=None, eps=3e-3)


def nll_checks(compiler, work):
    """A linear classifier whose ONNX graph ends in LogSoftmax and
    NegativeLogLikelihoodLoss (class weights, ignore_index, mean): the
    importer builds the loss from graph ops. 20 SGD steps (the model's own
    scalar loss, --train without loss=) against a NumPy float64 reference
    with PyTorch's NLLLoss semantics."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(8)
    n, d, c, lr = 6, 5, 4, 0.5
    w0 = (rng.standard_normal((d, c)) * 0.5).astype(np.float32)
    cw = np.array([1.0, 2.0, 0.5, 1.5], np.float32)
    x = rng.standard_normal((n, d)).astype(np.float32)
    labels = np.array([0, 3, 1, 2, 1, 2], np.int64)  # 2 is ignored
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["cw"],
                          value=numpy_helper.from_array(cw, "cw")),
         helper.make_node("MatMul", ["x", "w"], ["logits"]),
         helper.make_node("LogSoftmax", ["logits"], ["logp"], axis=1),
         helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels", "cw"],
                          ["loss"], ignore_index=2)],
        "nll", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, d]),
                helper.make_tensor_value_info("labels", TensorProto.INT64, [n])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(w0, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = os.path.join(work, "nll.onnx")
    onnx.save(model, path)
    outdir = os.path.join(work, "nll_sgd")
    got, err = train_program(compiler, path, f"optimizer=sgd lr={lr}",
                             [("x", x), ("labels", labels)], "nll", outdir)
    if err is not None:
        return [("nll_loss_sgd", "failed", err)]
    # The class weights are a Constant (an initializer would be trained).
    w, cwv = w0.astype(np.float64), cw.astype(np.float64)
    keep = labels != 2
    onehot = np.eye(c)[labels]
    want = []
    for _ in range(STEPS):
        z = x @ w
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        wt = (onehot @ cwv) * keep
        total = wt.sum()
        want.append(-(logp[np.arange(n), labels] * wt).sum() / total)
        # dL/dlogp = -onehot * wt / total; through log-softmax:
        g = -onehot * (wt / total)[:, None]
        dz = g - np.exp(logp) * g.sum(1, keepdims=True)
        w = w - lr * (x.T @ dz)
    want = np.array(want)
    curve = np.max(np.abs(got - want) / np.abs(want))
    wend = np.load(os.path.join(outdir, "w.npy")).astype(np.float64)
    werr = np.max(np.abs(wend - w)) / np.max(np.abs(w))
    ok = curve < 1e-4 and werr < 1e-4
    msg = f"loss curve max rel err {curve:.1e}, end weights {werr:.1e}"
    print(f"{'ok  ' if ok else 'FAIL'} nll_loss_sgd: {want[0]:.5f} -> {want[-1]:.5f}, {msg}")
    return [("nll_loss_sgd", "passed" if ok else "failed", msg)]


def seq2seq_checks(compiler, work):
    """The T5 and wav2vec2 fixtures (batch 2; T5: encoder and decoder ids,
    wav2vec2: a label per audio frame): the onnxruntime loss, finite
    difference gradient and Adam checks."""
    rng = np.random.default_rng(6)
    t5 = [("input_ids", rng.integers(0, 512, (2, 32)).astype(np.int64)),
          ("decoder_input_ids", rng.integers(0, 512, (2, 16)).astype(np.int64)),
          ("labels", rng.integers(0, 512, (2, 16)).astype(np.int64))]
    audio = [("input_values", rng.standard_normal((2, 1600)).astype(np.float32)),
             ("labels", rng.integers(0, 32, (2, 159)).astype(np.int64))]
    out = []
    # wav2vec2's random-direction derivative is small (~6e-4): a larger
    # step keeps its central difference above the f32 loss's round-off.
    for name, feeds, eps in (("t5", t5, 3e-3), ("wav2vec2", audio, 1e-2)):
        out += network_checks(compiler, work, name,
                              os.path.join(ROOT, "test", "fixtures", name + ".onnx"),
                              feeds, ["--default-batch=2"], None, rng, eps=eps)
    return out


def resnet_checks(compiler, work):
    """The small ResNet of run_networks.py. Training-mode batch norm
    normalizes with batch statistics, so onnxruntime (inference form) is no
    reference for the loss; the gradient and Adam checks apply."""
    return classifier_checks(compiler, work, "small_resnet", (3, 32, 32), 4,
                             exclude=r"\.bn\.[mv]$", ort_loss=False, eps=3e-3)


def instance_norm_checks(compiler, work):
    """run_networks.py's CNN with InstanceNormalization and Tile: the
    onnxruntime loss, finite-difference gradient and Adam checks."""
    return classifier_checks(compiler, work, "instance_norm_tile", (3, 8, 6), 5,
                             exclude=None, eps=3e-3)


def raw_data_offsets(model, blob):
    """Where each initializer's raw_data lies in the model file `blob`.
    Searching for the bytes is ambiguous where initializers are equal
    (LayerNorm weights of ones, zero biases): the model is serialized again
    with distinct random bytes in each raw_data, which must give a file of
    the same layout, and those are searched instead."""
    import onnx
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    rng = np.random.default_rng(0)
    marks = {}
    for t in probe.graph.initializer:
        if t.raw_data:
            t.raw_data = rng.bytes(len(t.raw_data))
            marks[t.name] = t.raw_data
    data = probe.SerializeToString()
    assert model.SerializeToString() == blob and len(data) == len(blob), \
        "the model file is not what onnx serializes: offsets unknown"
    offsets = {}
    for name, mark in marks.items():
        at = data.find(mark)
        assert at >= 0 and data.find(mark, at + 1) < 0, name
        offsets[name] = at
    return offsets


def network_checks(compiler, work, name, model_path, feeds, extra, exclude, rng,
                   ort_loss=True, eps=1e-2):
    """Checks independent of PyTorch: (1) the step-1 loss must equal the
    cross-entropy of onnxruntime's logits, (2) the gradient the compiled
    backward computes (one SGD step with lr=1: g = w0 - w1) must match
    central finite differences of the compiled loss along g and along a
    random direction, (3) 20 Adam steps must lower the loss."""
    import onnx
    import onnxruntime as ort
    results = []
    GPT2 = model_path
    fname = os.path.basename(model_path)
    stem = os.path.splitext(fname)[0]
    exe = os.path.join(work, f"{name}_sgd.bin")
    p = subprocess.run([compiler, GPT2, "--train=loss=softmax-cross-entropy:labels "
                        "optimizer=sgd lr=1", "-o", exe] + extra,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return [(f"{name}_gradient", "failed", "dist-compile: " + p.stderr[-1500:])]

    def loss_with(weights_dir, save=None):
        extra = ["--steps", "1"]
        if weights_dir:
            extra += ["--weights-dir", weights_dir]
        if save:
            extra += ["--save-state", save]
        out = os.path.join(work, f"{name}_run")
        rc, text = common.run_program(exe, stem, feeds, out, extra=extra)
        if rc != 0:
            raise RuntimeError(text[-1500:])
        return float(re.search(r"^step 1 loss (\S+)", text, re.M).group(1))

    # (1) forward + loss against onnxruntime.
    save = os.path.join(work, f"{name}_state")
    os.makedirs(save, exist_ok=True)
    l0 = loss_with(None, save)
    if ort_loss:
        labels = dict(feeds)["labels"]
        logits = ort.InferenceSession(GPT2, providers=["CPUExecutionProvider"]).run(
            None, {n: a for n, a in feeds if n != "labels"})[0]
        logits = logits.reshape(-1, logits.shape[-1]).astype(np.float64)
        lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        want = np.mean(lse - logits[np.arange(len(logits)), labels.reshape(-1)])
        rel = abs(l0 - want) / want
        results.append((f"{name}_loss_vs_onnxruntime", "passed" if rel < 1e-4 else "failed",
                        f"step-1 loss {l0:.7f} vs {want:.7f} (rel {rel:.1e})"))
        print(f"{'ok  ' if rel < 1e-4 else 'FAIL'} {name} step-1 loss {l0:.7f}, "
              f"onnxruntime logits give {want:.7f} (rel {rel:.1e})")
    # (2) gradient vs central differences of the compiled loss.
    model = onnx.load(GPT2, load_external_data=False)
    blob = open(GPT2, "rb").read()
    offsets = raw_data_offsets(model, blob)
    params = {}
    for init in model.graph.initializer:
        path = os.path.join(save, common.sanitize(init.name) + ".npy")
        if init.data_type != onnx.TensorProto.FLOAT or not os.path.exists(path):
            continue
        if exclude and re.search(exclude, init.name):
            continue
        w0 = np.frombuffer(init.raw_data, dtype="<f4").astype(np.float64)
        g = w0 - np.load(path).astype(np.float64).reshape(-1)
        params[init.name] = (offsets[init.name], w0, g)
    # An Identity of an initializer is a weight of its own reading the same
    # bytes: perturbing the bytes moves both, so their gradients add up.
    for node in model.graph.node:
        path = os.path.join(save, common.sanitize(node.output[0]) + ".npy")
        if node.op_type == "Identity" and node.input[0] in params and os.path.exists(path):
            off, w0, g = params[node.input[0]]
            g = g + (w0 - np.load(path).astype(np.float64).reshape(-1))
            params[node.input[0]] = (off, w0, g)
    gnorm = np.sqrt(sum(np.sum(g * g) for _, _, g in params.values()))
    for label, direction in (("gradient", {k: g / gnorm for k, (_, _, g) in params.items()}),
                             ("random", {k: rng.standard_normal(w.shape)
                                         for k, (_, w, _) in params.items()})):
        norm = np.sqrt(sum(np.sum(v * v) for v in direction.values()))
        direction = {k: v / norm for k, v in direction.items()}
        analytic = sum(np.dot(params[k][2], v) for k, v in direction.items())
        losses = []
        for sign in (1, -1):
            data = bytearray(blob)
            for k, v in direction.items():
                off, w0, _ = params[k]
                data[off:off + 4 * w0.size] = (w0 + sign * eps * v).astype("<f4").tobytes()
            d = os.path.join(work, f"{name}_{label}_{sign}")
            os.makedirs(d, exist_ok=True)
            open(os.path.join(d, fname), "wb").write(bytes(data))
            losses.append(loss_with(d))
        numeric = (losses[0] - losses[1]) / (2 * eps)
        rel = abs(numeric - analytic) / max(abs(numeric), 1e-3)
        ok = rel < 2e-2
        results.append((f"{name}_gradient_{label}", "passed" if ok else "failed",
                        f"directional derivative {analytic:.6f} vs central difference "
                        f"{numeric:.6f} (rel {rel:.1e})"))
        print(f"{'ok  ' if ok else 'FAIL'} {name} gradient along {label} direction: "
              f"backward {analytic:.6f}, central difference {numeric:.6f} (rel {rel:.1e})")
    # (3) Adam lowers the loss over 20 steps.
    curve, err = train_program(compiler, GPT2,
                               "loss=softmax-cross-entropy:labels optimizer=adam lr=0.001",
                               feeds, stem, os.path.join(work, f"{name}_adam"), extra,
                               save=False)
    curve = [] if curve is None else list(curve)
    ok = err is None and all(b < a for a, b in zip(curve, curve[1:]))
    results.append((f"{name}_adam_20_steps", "passed" if ok else "failed",
                    f"loss {curve[:1]} -> {curve[-1:]}" if curve else err[-800:]))
    print(f"{'ok  ' if ok else 'FAIL'} {name} Adam 20 steps: loss "
          f"{curve[0] if curve else float('nan'):.4f} -> {curve[-1] if curve else float('nan'):.4f} "
          "(monotone)")
    return results


# The PyTorch reference runs under Debian's Python (python3-torch); the test
# venv has no torch.
TORCH_PYTHON = os.environ.get("DIST_TORCH_PYTHON", "/usr/bin/python3")
TORCH_REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "torch_reference.py")
# Optimizer flags of dist-compile --train and the same optimizer for
# torch.optim, per optimizer; {lr} is the model's SGD rate (TORCH_SGD_LR).
TORCH_CASES = {"sgd": ("optimizer=sgd lr={lr}", ["--optimizer", "sgd", "--lr", "{lr}"]),
               "adam": ("optimizer=adam lr=0.001", ["--optimizer", "adam", "--lr", "0.001"])}
# SGD rates at which the 20-step trajectory does not amplify round-off.
# GPT-2: from lr 0.01 up the shared LayerNorm/bias vector (one weight behind
# twelve uses, gradient norm ~4) sits at the edge of stability, and any
# perturbation, f32 round-off included, grows ~4x per step. The ResNet's
# ReLUs and max pool make the loss non-smooth instead: at lr 0.05 the
# float64 run passes 2.8e-8 (of the tensor's largest value) from the kink of
# one l1.a ReLU input at step 4, well inside float32 round-off, and which
# side a float32 run lands on depends on the kernels' summation order:
# oneDNN's SSE4.1 and AVX2 kernels follow float64, its AVX and AVX-512
# kernels and PyTorch's own float32 take the other branch (loss curve 4e-4
# and l1.a.w 3.5e-3 away). Such a run must match the float64 run that takes
# the other branch there, to the same 1e-4 (other_branches;
# docs/reliability.md has the analysis). The MoE LLaMA at lr 0.02 routes
# 19 of its 32 top-k choices differently after 20 steps than before and
# matches to 1e-7; at 0.05 the difference grows ~2x per step from step 5
# (1.7e-4 by step 20), round-off amplified, as GPT-2's above.
TORCH_SGD_LR = {"gpt2": 0.005, "small_resnet": 0.05, "moe_llama": 0.02,
                "scatter_net": 0.05}
# An element whose gradient never exceeded this fraction of the largest
# gradient in the float64 reference has no signal: its gradient is zero in
# exact arithmetic (GPT-2's key biases: softmax is invariant to adding the
# same q.b_k to every score of a row). f32 round-off gives it a gradient of
# ~1e-9 that Adam, which normalizes by the gradient's own magnitude, turns
# into steps of up to lr; such elements are left out of the end-weight
# comparison and counted.
NO_SIGNAL = 1e-10


# Branch points within this fraction of their tensor's largest |value| are
# decided by round-off. The float32 pre-activations next to a ReLU's kink
# differ from float64 by up to 2.2e-7 of the tensor's largest value (small
# ResNet, first step, measured for oneDNN's SSE4.1, AVX and AVX2 kernels and
# PyTorch's float32); 1e-6 leaves a margin of 4.5 for the drift of later
# steps. docs/reliability.md has the analysis.
KINK_MARGIN = 1e-6
# A loss-curve difference above 10x the agreement of runs on the same branch
# (2e-7) marks where a trajectory left the reference's.
DIVERGED = 2e-6


def compare_with_reference(got, outdir, want):
    """Loss-curve and end-weight errors of the program (curve `got`, state
    in `outdir`) against a torch_reference.py result `want`."""
    curve = float(np.max(np.abs(got - want["losses"]) / np.abs(want["losses"])))
    params = [k for k in want.files
              if k not in ("losses", "kinks") and not k.startswith("gradmax/")]
    ends = common.end_weight_errors(
        outdir, {k: (want[k], want["gradmax/" + k]) for k in params}, NO_SIGNAL)
    if ends["errors"]:
        return {"error": "; ".join(ends["errors"])}
    return {"curve": curve, "worst": float(ends["worst"]),
            "worst_name": ends["worst_name"], "worst_elem": ends["worst_elem"],
            "no_signal": ends["no_signal"], "params": len(params),
            "diverged": np.abs(got - want["losses"]) / np.abs(want["losses"]) > DIVERGED}


def other_branches(got, outdir, want, fit, reference, rtol, depth=3, tries=6):
    """The program and the float64 reference disagree: find whether the
    program followed a trajectory that float32 round-off may legitimately
    take, one that goes the other way at a branch point (ReLU kink, max-pool
    tie) the reference passed within KINK_MARGIN of. Greedy: the steps
    before the first step where the curves part (the last steps when only
    the end weights differ) hold the candidate kinks, nearest first; the
    flip that fits best is kept and the search repeats from its trajectory.
    Returns the flips taken [(step, node, index, margin)] and the fit of the
    final trajectory; no flips and `fit` when no flip helps."""
    chosen, best_fit, best_want = [], fit, want
    for _ in range(depth):
        if best_fit["curve"] <= rtol and best_fit["worst"] <= rtol:
            break
        parted = np.nonzero(best_fit["diverged"])[0]
        last = int(parted[0]) if len(parted) else STEPS  # step numbers are 1-based
        window = (max(1, last - 3), last)
        taken = {(s, n, i) for s, n, i, _ in chosen}
        events = [tuple(e) for e in best_want["kinks"]
                  if window[0] <= e[0] <= window[1]]
        events = sorted((e for e in events if (int(e[0]), int(e[1]), int(e[2])) not in taken),
                        key=lambda e: e[3])[:tries]
        step_best = None
        for s, n, i, m in events:
            flips = [(a, b, c) for a, b, c, _ in chosen] + [(int(s), int(n), int(i))]
            alt = reference(flips)
            if alt is None:
                continue
            alt_fit = compare_with_reference(got, outdir, alt)
            if "error" in alt_fit:
                continue
            score = max(alt_fit["curve"], alt_fit["worst"])
            if step_best is None or score < step_best[0]:
                step_best = (score, (int(s), int(n), int(i), m), alt_fit, alt)
            if score <= rtol:
                break
        if step_best is None or step_best[0] >= max(best_fit["curve"], best_fit["worst"]):
            break
        chosen.append(step_best[1])
        best_fit, best_want = step_best[2], step_best[3]
    if best_fit["curve"] <= rtol and best_fit["worst"] <= rtol:
        return chosen, best_fit
    return [], fit


def branch_search_selftest(want, reference, work, rtol):
    """other_branches must find a trajectory that takes another branch: the
    float64 run forced onto the other side of its nearest kink (steps 2..19)
    plays the program, whatever CPU runs the suite (on AVX2 no real program
    run needs the search)."""
    case = "small_resnet_sgd_branch_search_finds_a_flipped_run"
    inner = [e for e in want["kinks"] if 2 <= e[0] < STEPS]
    if not inner:
        return (case, "failed", "the reference met no kink within KINK_MARGIN")
    s, n, i, m = min(inner, key=lambda e: e[3])
    flip = (int(s), int(n), int(i))
    alt = reference([flip])
    if alt is None:
        return (case, "failed", "torch_reference.py: " + reference.error)
    fake = os.path.join(work, "branch_selftest")
    os.makedirs(fake, exist_ok=True)
    for k in alt.files:
        if k not in ("losses", "kinks") and not k.startswith("gradmax/"):
            np.save(os.path.join(fake, common.sanitize(k) + ".npy"),
                    alt[k].astype(np.float32))
    fit = compare_with_reference(alt["losses"], fake, want)
    if max(fit["curve"], fit["worst"]) <= rtol:
        return (case, "failed", f"flipping step {s:.0f} node {n:.0f} element "
                f"{i:.0f} changes nothing beyond rtol; the selftest needs "
                "another kink")
    branches, found = other_branches(alt["losses"], fake, want, fit, reference, rtol)
    ok = [b[:3] for b in branches] == [flip]
    print(f"{'ok  ' if ok else 'FAIL'} {case}: the run flipped at step {s:.0f} "
          f"(margin {m:.1e}) is {max(fit['curve'], fit['worst']):.1e} from the "
          f"reference; the search found {[b[:3] for b in branches]}")
    return (case, "passed" if ok else "failed",
            "" if ok else f"expected {[flip]}, found {branches}")


def torch_checks(compiler, work, name, model_path, feeds, extra, exclude, rtol):
    """20 steps of SGD and of Adam through the compiled program against
    torch_reference.py (float64 autograd + torch.optim on the same ONNX
    graph, weights and batch). Every step's loss must be within rtol of the
    reference's; each trained tensor's end value within rtol in the 2-norm,
    |w - w_ref| / |w_ref|, over its elements with gradient signal. The
    largest single-element error (relative to the tensor's largest element)
    is printed too: Adam scales each element's step by that element's own
    gradient history, so an element whose gradient hovers near zero turns
    f32 round-off into a step of up to lr. On the small ResNet that is one
    element of 9216 in l2.b.w at ~2e-4, the element where PyTorch's own
    float32 run also strays most from its float64 run (1.3e-5; PyTorch's CPU
    batch norm accumulates in double, oneDNN's in float)."""
    results = []
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch, onnx"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        msg = (f"{TORCH_PYTHON} cannot import torch and onnx (install python3-torch "
               "and python3-onnx; scripts/install-deps.sh does): " + probe.stderr[-300:])
        return [(f"{name}_{opt}_vs_pytorch", "failed", msg) for opt in TORCH_CASES]
    stem = os.path.splitext(os.path.basename(model_path))[0]
    feed_dir = os.path.join(work, f"{name}_torch_feeds")
    os.makedirs(feed_dir, exist_ok=True)
    feed_args = []
    for fname, arr in feeds:
        path = os.path.join(feed_dir, fname + ".npy")
        np.save(path, arr)
        feed_args += (["--labels", path] if fname == "labels"
                      else ["--feed", f"{fname}={path}"])
    model = __import__("onnx").load(model_path, load_external_data=False)
    frozen = [i.name for i in model.graph.initializer if exclude and re.search(exclude, i.name)]
    node_names = [f"{n.output[0]}:{n.op_type}" for n in model.graph.node]
    for opt, (flags, torch_args) in TORCH_CASES.items():
        case = f"{name}_{opt}_vs_pytorch"
        flags = flags.format(lr=TORCH_SGD_LR[name])
        torch_args = [a.format(lr=TORCH_SGD_LR[name]) for a in torch_args]
        outdir = os.path.join(work, f"{name}_{opt}_torch")
        got, err = train_program(compiler, model_path,
                                 f"loss=softmax-cross-entropy:labels {flags}", feeds, stem,
                                 outdir, extra)
        runs = []

        def reference(flips=()):
            """The float64 run (with the branches `flips` forced), or None."""
            path = os.path.join(work, f"{name}_{opt}_ref{len(runs)}.npz")
            runs.append(path)
            ref = subprocess.run(
                [TORCH_PYTHON, TORCH_REFERENCE, "--model", model_path, "--steps", str(STEPS),
                 "--out", path, "--exclude", ",".join(frozen),
                 "--kink-margin", str(KINK_MARGIN)] + feed_args + torch_args +
                [f"--flip={s}:{n}:{i}" for s, n, i in flips],
                capture_output=True, text=True)
            reference.error = ref.stderr[-1000:] if ref.returncode else None
            return None if ref.returncode else np.load(path)

        want = reference()
        errors = []
        if err is not None:
            errors.append("program: " + err[-1000:])
        if want is None:
            errors.append("torch_reference.py: " + reference.error)
        if errors:
            results.append((case, "failed", "; ".join(errors)))
            print(f"FAIL {case}: " + "; ".join(errors))
            continue
        fit = compare_with_reference(got, outdir, want)
        if "error" in fit:
            results.append((case, "failed", fit["error"]))
            print(f"FAIL {case}: {fit['error']}")
            continue
        branches = []
        if fit["curve"] > rtol or fit["worst"] > rtol:
            branches, fit = other_branches(got, outdir, want, fit, reference, rtol)
        if fit["curve"] > rtol:
            errors.append(f"loss curve: max relative error {fit['curve']:.2e}")
        if fit["worst"] > rtol:
            errors.append(f"end weights: relative error {fit['worst']:.2e} "
                          f"({fit['worst_name']})")
        taken = "".join(
            f"; matches the float64 run taking the other branch at step {s} of "
            f"{node_names[n]} element {i} (margin {m:.1e} of its tensor's largest "
            f"value, inside f32 round-off)" for s, n, i, m in branches)
        print(f"{'ok  ' if not errors else 'FAIL'} {case}: loss {want['losses'][0]:.5f} -> "
              f"{want['losses'][-1]:.5f}, curve max rel err {fit['curve']:.1e}, end weights "
              f"rel err {fit['worst']:.1e} (largest element {fit['worst_elem']:.1e}) over "
              f"{fit['params']} tensors ({fit['no_signal']} elements without gradient "
              f"signal left out){taken}" + ("; " + "; ".join(errors) if errors else ""))
        results.append((case, "failed" if errors else "passed", "; ".join(errors)))
        if name == "small_resnet" and opt == "sgd":
            results.append(branch_search_selftest(want, reference, work, rtol))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--junit")
    ap.add_argument("--rtol", type=float, default=1e-4)
    args = ap.parse_args()
    t0 = time.time()
    work = common.work_dir("dist-training")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    t = rng.standard_normal((4, 4)).astype(np.float32)
    results = []
    compiler = common.tool(args.build, "dist-compile")
    for name, (flags, opt) in CASES.items():
        case = f"mlp_{name}"
        outdir = os.path.join(work, case)
        got, err = train_program(compiler, MLP, f"loss=mse:target {flags}",
                                 [("x", x), ("target", t)], "mlp_external", outdir,
                                 ["--input-shape=x:4x8"])
        if err is not None:
            results.append((case, "failed", err))
            continue
        want, wref = mlp_reference(x, t, opt)
        errors = []
        curve = np.max(np.abs(got - want) / np.abs(want))
        if curve > args.rtol:
            errors.append(f"loss curve: max relative error {curve:.2e}")
        worst = 0.0
        for k, ref in wref.items():
            w = np.load(os.path.join(outdir, k + ".npy")).astype(np.float64)
            rel = np.max(np.abs(w - ref)) / np.max(np.abs(ref))
            worst = max(worst, rel)
        if worst > args.rtol:
            errors.append(f"end weights: max relative error {worst:.2e}")
        status = "failed" if errors else "passed"
        print(f"{'ok  ' if not errors else 'FAIL'} {case}: loss {want[0]:.5f} -> "
              f"{want[-1]:.5f}, curve max rel err {curve:.1e}, "
              f"weights max rel err {worst:.1e}" + ("; " + "; ".join(errors) if errors else ""))
        results.append((case, status, "; ".join(errors)))
    results += mixed_precision_checks(compiler, work, x, t)
    rng = np.random.default_rng(3)
    results += torch_checks(
        compiler, work, "gpt2", GPT2,
        [("input_ids", rng.integers(0, 512, (1, 32)).astype(np.int64)),
         ("labels", rng.integers(0, 512, (1, 32)).astype(np.int64))], [], None, args.rtol)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run_networks
    resnet = os.path.join(work, "small_resnet.onnx")
    run_networks.small_resnet(resnet)
    rng = np.random.default_rng(4)
    results += torch_checks(
        compiler, work, "small_resnet", resnet,
        [("image", rng.standard_normal((4, 3, 32, 32)).astype(np.float32)),
         ("labels", rng.integers(0, 10, (4,)).astype(np.int64))],
        ["--default-batch=4"], r"\.bn\.[mv]$", args.rtol)
    moe = run_networks.moe_llama(os.path.join(work, "moe_llama.onnx"), args.build,
                                 routing_outputs=False)
    rng = np.random.default_rng(5)
    results += torch_checks(
        compiler, work, "moe_llama", moe,
        [("input_ids", rng.integers(0, run_networks.MOE["vocab"], (2, run_networks.MOE["seq"]))),
         ("labels", rng.integers(0, run_networks.MOE["vocab"], (2, run_networks.MOE["seq"])))],
        ["--default-batch=2"], None, args.rtol)
    results += gpt2_checks(compiler, work)
    results += gpt2_mixed_checks(compiler, work)
    results += resnet_checks(compiler, work)
    results += instance_norm_checks(compiler, work)
    results += upsampling_checks(compiler, work)
    results += gather_elements_checks(compiler, work)
    results += resize_checks(compiler, work)
    results += scatter_checks(compiler, work, args.rtol)
    results += lrn_checks(compiler, work)
    results += seq2seq_checks(compiler, work)
    results += nll_checks(compiler, work)
    shutil.rmtree(work, ignore_errors=True)
    return common.finish("numerics.training", results, args.junit, time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
