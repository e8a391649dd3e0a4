#!/usr/bin/env python3
"""Why the small ResNet's SGD run differs between oneDNN ISAs (issue 12).

Trains the small ResNet of test/numerics/run_training.py (same weights,
batch and 20 SGD steps) through the compiled program once per oneDNN ISA
(DNNL_MAX_CPU_ISA), and with PyTorch in float32, and compares each run with
the float64 reference: the largest relative loss-curve error and the worst
end-weight error (2-norm per tensor). It then lists the branch points the
float64 run passes nearest (ReLU inputs near 0, max-pool near-ties, relative
to the tensor's largest |value|) and, for every run that left the
reference, whether the float64 run forced onto the other side of the
nearest kink explains it. The figures are in docs/reliability.md.

    .venv/bin/python bench/numerics/isa_study.py --build build --lr 0.05
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "numerics"))
import common  # noqa: E402
import run_networks  # noqa: E402
import run_training as rt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--isas", default="SSE41,AVX,AVX2,default")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="isa-study-")
    model = os.path.join(work, "small_resnet.onnx")
    run_networks.small_resnet(model)
    rng = np.random.default_rng(4)  # run_training.py's batch
    image = rng.standard_normal((4, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, (4,)).astype(np.int64)
    np.save(os.path.join(work, "image.npy"), image)
    np.save(os.path.join(work, "labels.npy"), labels)
    import onnx
    m = onnx.load(model)
    frozen = [i.name for i in m.graph.initializer if re.search(r"\.bn\.[mv]$", i.name)]
    names = [f"{n.output[0]}:{n.op_type}" for n in m.graph.node]

    def reference(out, dtype="float64", flips=()):
        subprocess.run([rt.TORCH_PYTHON, rt.TORCH_REFERENCE, "--model", model,
                        "--steps", str(rt.STEPS), "--out", out, "--exclude", ",".join(frozen),
                        "--feed", "image=" + os.path.join(work, "image.npy"),
                        "--labels", os.path.join(work, "labels.npy"), "--optimizer", "sgd",
                        "--lr", str(args.lr), "--dtype", dtype,
                        "--kink-margin", str(rt.KINK_MARGIN)] +
                       [f"--flip={s}:{n}:{i}" for s, n, i in flips], check=True)
        return np.load(out)

    def errors(curve, weights, want):
        c = np.max(np.abs(curve - want["losses"]) / np.abs(want["losses"]))
        w, wn = max((np.linalg.norm(weights[k] - want[k]) / np.linalg.norm(want[k]), k)
                    for k in weights)
        return c, w, wn

    want = reference(os.path.join(work, "ref.npz"))
    print(f"lr {args.lr}: float64 loss {want['losses'][0]:.5f} -> {want['losses'][-1]:.5f}")
    compiler = common.tool(args.build, "dist-compile")
    runs = {}
    for isa in args.isas.split(","):
        env = os.environ.pop("DNNL_MAX_CPU_ISA", None)
        if isa != "default":
            os.environ["DNNL_MAX_CPU_ISA"] = isa
        outdir = os.path.join(work, "prog_" + isa)
        got, err = rt.train_program(compiler, model,
                                    f"loss=softmax-cross-entropy:labels optimizer=sgd lr={args.lr}",
                                    [("image", image), ("labels", labels)], "small_resnet",
                                    outdir, ["--default-batch=4"])
        os.environ.pop("DNNL_MAX_CPU_ISA", None)
        if env is not None:
            os.environ["DNNL_MAX_CPU_ISA"] = env
        if err:
            sys.exit(err)
        weights = {k: np.load(os.path.join(outdir, common.sanitize(k) + ".npy"))
                   .astype(np.float64).reshape(want[k].shape)
                   for k in want.files if k not in ("losses", "kinks") and "/" not in k}
        runs[f"program, DNNL_MAX_CPU_ISA={isa}"] = (got, weights)
    f32 = reference(os.path.join(work, "ref32.npz"), "float32")
    runs["PyTorch float32"] = (f32["losses"], {k: f32[k] for k in want.files
                                               if k not in ("losses", "kinks") and "/" not in k})
    kinks = sorted(want["kinks"], key=lambda e: e[3])[:5]
    print("nearest branch points of the float64 run (step, node, element, margin):")
    for s, n, i, margin in kinks:
        print(f"  step {s:.0f} {names[int(n)]} element {i:.0f}: {margin:.1e}")
    s, n, i, _ = kinks[0]
    flipped = reference(os.path.join(work, "flip.npz"), flips=[(int(s), int(n), int(i))])
    print(f"{'run':34s} {'vs float64':>22s} {'vs float64 flipped at the nearest kink':>40s}")
    for label, (curve, weights) in runs.items():
        c, w, wn = errors(curve, weights, want)
        fc, fw, _ = errors(curve, weights, flipped)
        print(f"{label:34s} curve {c:.1e} weights {w:.1e} ({wn})   curve {fc:.1e} weights {fw:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
