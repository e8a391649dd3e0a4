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
SGD + momentum and Adam. A 2-layer GPT and a small ResNet need gradient
lowerings that are not done yet (docs/codegen.md, "Not yet done").

    .venv/bin/python test/numerics/run_training.py --build build --junit out.xml
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
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
}


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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--junit")
    ap.add_argument("--rtol", type=float, default=1e-4)
    args = ap.parse_args()
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="dist-training-")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    t = rng.standard_normal((4, 4)).astype(np.float32)
    results = []
    compiler = common.tool(args.build, "dist-compile")
    for name, (flags, opt) in CASES.items():
        case = f"mlp_{name}"
        exe = os.path.join(work, case + ".bin")
        p = subprocess.run([compiler, MLP, "--input-shape=x:4x8",
                            f"--train=loss=mse:target {flags}", "-o", exe],
                           capture_output=True, text=True)
        if p.returncode != 0:
            results.append((case, "failed", "dist-compile: " + p.stderr[-1500:]))
            continue
        outdir = os.path.join(work, case)
        rc, text = common.run_program(exe, "mlp_external",
                                      [("x", x), ("target", t)], outdir,
                                      extra=["--steps", str(STEPS),
                                             "--save-state", outdir])
        if rc != 0:
            results.append((case, "failed", text[-1500:]))
            continue
        got = np.array([float(m.group(1)) for m in
                        re.finditer(r"^step \d+ loss (\S+)", text, re.M)])
        want, wref = mlp_reference(x, t, opt)
        errors = []
        if len(got) != STEPS:
            errors.append(f"expected {STEPS} loss lines, got {len(got)}")
        else:
            rel = np.max(np.abs(got - want) / np.abs(want))
            if rel > args.rtol:
                errors.append(f"loss curve: max relative error {rel:.2e}")
        worst = 0.0
        for k, ref in wref.items():
            w = np.load(os.path.join(outdir, k + ".npy")).astype(np.float64)
            rel = np.max(np.abs(w - ref)) / np.max(np.abs(ref))
            worst = max(worst, rel)
        if worst > args.rtol:
            errors.append(f"end weights: max relative error {worst:.2e}")
        status = "failed" if errors else "passed"
        print(f"{'ok  ' if not errors else 'FAIL'} {case}: loss {want[0]:.5f} -> "
              f"{want[-1]:.5f}, curve max rel err "
              f"{np.max(np.abs(got - want) / np.abs(want)) if len(got) == STEPS else float('nan'):.1e}, "
              f"weights max rel err {worst:.1e}" + ("; " + "; ".join(errors) if errors else ""))
        results.append((case, status, "; ".join(errors)))
    for case, why in (("gpt2_2layer", "2-layer GPT training needs lowerings of the "
                       "3-D cross-entropy loss path; not done yet"),
                      ("small_resnet", "ResNet training needs conv/pool/batch-norm "
                       "gradient lowerings; not done yet")):
        results.append((case, "skipped", why))
    shutil.rmtree(work, ignore_errors=True)
    return common.finish("numerics.training", results, args.junit, time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
