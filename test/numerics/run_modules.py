#!/usr/bin/env python3
"""Training through generated programs vs the PyTorch modules themselves.

For LLaMA, Mistral (sliding-window attention), a Whisper-like encoder-
decoder, BERT and ViT sequence classifiers (transformers 4.40.2, small
configs, random weights), module_reference.py exports the module with
torch.onnx.export and trains the module in float64 with torch.optim.Adam;
this suite compiles the export with `dist-compile --train` and trains it
as well. Unlike torch_reference.py, which re-runs the ONNX graph, the
reference here is what PyTorch trains: buffers (causal and sliding-window
masks, rotary tables, which the export holds as ONNX Constants) stay fixed,
a parameter with requires_grad=False (Whisper's sinusoidal encoder
positions) is frozen with `freeze=`, and parameters the exporter
deduplicated behind Identity nodes are trained separately. BERT and ViT
pool with `x[:, 0]`, a Gather on axis 1 whose gradient is a scatter_add
on that axis.

Checks per model: every step's loss within --rtol (1e-6) of the module's;
every trained tensor that maps onto a module parameter within 1e-5 in the
2-norm at the end; frozen tensors (Constants, freeze=) unchanged bit for
bit and without optimizer state; the compile's trained-parameter count
equal to the module's.

    .venv/bin/python test/numerics/run_modules.py --build build --junit out.xml

The reference runs under a Python with torch and transformers: the venv of
requirements-fixtures.txt (scripts/test.sh creates .venv-fixtures), or
DIST_TORCH_PYTHON.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCH_PYTHON = os.environ.get(
    "DIST_TORCH_PYTHON", os.path.join(ROOT, ".venv-fixtures", "bin", "python"))
MODELS = ["llama", "mistral", "whisper", "bert", "vit"]
STEPS = 10
WEIGHT_RTOL = 1e-5


def check_model(compiler, work, name, rtol):
    """One model: reference, compile, train, compare. Returns errors."""
    ref = subprocess.run([TORCH_PYTHON, os.path.join(HERE, "module_reference.py"),
                          "--model", name, "--work", work, "--steps", str(STEPS)],
                         capture_output=True, text=True)
    if ref.returncode != 0:
        return ["module_reference.py: " + ref.stderr[-1500:]], ""
    stem = os.path.join(work, name)
    with open(stem + ".json") as f:
        meta = json.load(f)
    exe = stem + ".bin"
    p = subprocess.run([compiler, stem + ".onnx", f"--train={meta['train']}",
                        "-o", exe], capture_output=True, text=True)
    if p.returncode != 0:
        return ["dist-compile: " + p.stderr[-1500:]], ""
    errors = []
    m = re.search(r"training (\d+) tensor\(s\), (\d+) parameter\(s\)", p.stderr)
    if not m:
        errors.append("dist-compile printed no training summary: " + p.stderr[-300:])
    elif int(m.group(2)) != meta["parameters"]:
        errors.append(f"dist-compile trains {m.group(2)} parameters, the module "
                      f"{meta['parameters']}")
    state = stem + ".state"
    args = [exe, "--steps", str(STEPS), "--save-state", state, "-o", state]
    args += [f"{n}={stem}.{n}.npy" for n in meta["inputs"]]
    args += [f"labels={stem}.labels.npy"]
    run = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        return errors + ["program: " + (run.stdout + run.stderr)[-1500:]], ""
    got = np.array([float(x) for x in
                    re.findall(r"^step \d+ loss (\S+)", run.stdout, re.M)])
    want = np.load(stem + ".ref.npz")
    if len(got) != STEPS:
        return errors + [f"expected {STEPS} loss lines, got {len(got)}"], ""
    curve = float(np.max(np.abs(got - want["losses"]) / np.abs(want["losses"])))
    if curve > rtol:
        errors.append(f"loss curve: max relative error {curve:.2e} (> {rtol:g}); "
                      f"got {got.tolist()}, module {want['losses'].tolist()}")
    # Elements without gradient signal (key biases) are left out, as in
    # run_training.py (common.end_weight_errors); frozen parameters
    # (freeze=) must keep their start value exactly.
    ends = [k[4:] for k in want.files if k.startswith("end/")]
    for init in ends:
        path = os.path.join(state, common.sanitize(init) + ".npy")
        if "start/" + init in want.files and os.path.exists(path):
            w = np.load(path).reshape(want["start/" + init].shape)
            if not np.array_equal(w, want["start/" + init]):
                errors.append(f"frozen {init} changed")
    cmp = common.end_weight_errors(
        state, {k: (want["end/" + k], want["gradmax/" + k]) for k in ends
                if "gradmax/" + k in want.files})
    errors += cmp["errors"]
    worst, worst_name = cmp["worst"], cmp["worst_name"]
    compared, no_signal = cmp["compared"], cmp["no_signal"]
    if worst > WEIGHT_RTOL:
        errors.append(f"end weights: {worst_name} relative error {worst:.2e}")
    # Frozen tensors (Constants, freeze=) have no optimizer state.
    frozen = re.findall(r"(\S+) \((constant|training_info|freeze|train-only)\)", p.stderr)
    states = set(os.listdir(state))
    for tensor, why in frozen:
        if common.sanitize(tensor) + ".exp_avg.npy" in states:
            errors.append(f"frozen {tensor} ({why}) has Adam state")
    summary = (f"{meta['parameters']} parameters, loss {want['losses'][0]:.5f} -> {want['losses'][-1]:.5f}, curve max "
               f"rel err {curve:.1e}, end weights rel err {worst:.1e} ({worst_name}) "
               f"over {compared} tensors ({no_signal} elements without gradient "
               f"signal left out), {len(frozen)} frozen")
    return errors, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--junit")
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--only", nargs="*", choices=MODELS)
    args = ap.parse_args()
    t0 = time.time()
    compiler = common.tool(args.build, "dist-compile")
    results = []
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch, transformers, onnx"],
                           capture_output=True, text=True) \
        if os.path.exists(TORCH_PYTHON) else None
    if probe is None or probe.returncode != 0:
        msg = (f"{TORCH_PYTHON} cannot import torch, transformers and onnx; create "
               "it as requirements-fixtures.txt says (scripts/test.sh does)"
               + (": " + probe.stderr[-300:] if probe else ""))
        results = [(f"{m}_vs_module", "failed", msg) for m in args.only or MODELS]
        print("FAIL " + msg)
        return common.finish("numerics.modules", results, args.junit, time.time() - t0)
    work = common.work_dir("dist-modules")
    # Two models at a time: most of the time is the host compiler.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda n: (n, check_model(compiler, work, n, args.rtol)),
                             args.only or MODELS))
    for name, (errors, summary) in done:
        case = f"{name}_vs_module"
        print(f"{'ok  ' if not errors else 'FAIL'} {case}: {summary}"
              + ("; " + "; ".join(errors) if errors else ""))
        results.append((case, "failed" if errors else "passed", "; ".join(errors)))
    shutil.rmtree(work, ignore_errors=True)
    return common.finish("numerics.modules", results, args.junit, time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
