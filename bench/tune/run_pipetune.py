#!/usr/bin/env python3
"""PipeTune's comparison on DistOpt's predictions (issue 16).

PipeTune (Rocha et al., Middleware'20) tunes system parameters together with
each hyper-parameter trial and reports up to 22.6% less tuning time and 1.7x
faster training than tuning with one fixed system configuration. This runs
the product path for the same comparison: dist-modelgen models, then
`dist-opt --dist-search --dist-tune=TRIALS --dist-report=...`, which plans
every trial on its own and runs every trial with the first trial's best plan
(the fixed configuration). A second table runs `--dist-objective=
time-to-accuracy`: the chosen (batch, plan) against the batch of highest
throughput and against batch 256, each with its best plan, to the same
target. Every figure is a prediction of DistOpt's cost
model and simulator, not a measurement.

Usage: bench/tune/run_pipetune.py [--build build] [--out DIR]
Prints every row as a Markdown table.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchutil import run  # noqa: E402

MODELS = {
    # name: dist-modelgen arguments
    "GPT 12x768": ["gpt", "--layers", "12", "--hidden", "768", "--heads",
                   "12", "--seq", "512", "--vocab", "32000"],
    "ResNet-50": ["resnet", "--depth", "50", "--image", "224"],
    "VGG-16": ["vgg16", "--image", "224"],
}
CLUSTERS = ["dgx-a100-80gb:1", "pcie-v100x4:4"]
# Trials: batch x asynchronous updates (the learning rate alternates; it
# does not change a plan). Each trial trains one epoch of EPOCH samples.
BATCHES = [32, 128, 512, 2048]
EPOCH = 102400
# Time to accuracy: noise scale and target per model (E_min samples).
TTA = {"GPT 12x768": (2048, 5e8), "ResNet-50": (1024, 1e8),
       "VGG-16": (1024, 1e8)}
FIXED_BATCH = 256


def trials():
    out = []
    for i, b in enumerate(BATCHES):
        for a in (0, 1):
            lr = "1e-3" if (i + a) % 2 == 0 else "1e-2"
            out.append(f"batch={b},lr={lr},async={a},steps={EPOCH // b}")
    return ";".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="/tmp/pipetune-bench")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    opt = os.path.join(args.build, "bin", "dist-opt")
    gen = os.path.join(args.build, "bin", "dist-modelgen")
    spec = trials()
    print(f"trials: {spec.replace(';', '; ')}\n")
    print("| model | cluster | fixed plan (trial 1's best) | tuned s | "
          "fixed s | tuning time saved | per-trial speedup (min-max) | "
          "trials with another plan |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    tta_rows = []
    for name, gargs in MODELS.items():
        onnx = os.path.join(args.out, name.split()[0].lower() + ".onnx")
        run([gen] + gargs + ["-o", onnx])
        for cluster in CLUSTERS:
            base = [opt, onnx, "--dist-weights=ignore",
                    f"--dist-cluster={cluster}", "--dist-search",
                    "--dist-progress=never", "-o", os.devnull]
            report = os.path.join(args.out, "tune.json")
            run(base + [f"--dist-tune={spec}", f"--dist-report={report}"])
            t = json.load(open(report))["tune"]
            tr = t["trials"]
            speedups = [x["fixed_time_s"] / x["time_s"] for x in tr]
            other = sum(1 for x in tr if x["plan"] != x["fixed_plan"])
            fixed_label = tr[0]["label"]
            print(f"| {name} | {cluster} | {fixed_label} | {t['time_s']:.1f} "
                  f"| {t['fixed_time_s']:.1f} | "
                  f"{100 * (1 - t['time_s'] / t['fixed_time_s']):.1f}% | "
                  f"{min(speedups):.2f}-{max(speedups):.2f}x | "
                  f"{other} of {len(tr)} |", flush=True)
            # Time to accuracy: the chosen batch and plan against the best
            # plan for a fixed batch, to the same target.
            noise, emin = TTA[name]
            report = os.path.join(args.out, "tta.json")
            run(base + ["--dist-objective=time-to-accuracy",
                        f"--dist-noise-scale={noise}",
                        f"--dist-target-examples={emin:g}",
                        "--dist-batches=32..8192", f"--dist-report={report}"])
            a = json.load(open(report))["time_to_accuracy"]
            ok = [b for b in a["batches"] if "time_s" in b]
            fixed = next(b for b in ok if b["batch"] == FIXED_BATCH)
            best = next(b for b in ok if b["batch"] == a["best_batch"])
            fast = max(ok, key=lambda b: b["samples_per_s"])
            tta_rows.append(
                f"| {name} | {cluster} | {noise} | {emin:g} | "
                f"{best['batch']}: {best['label']} | {best['time_s']:.0f} | "
                f"{fast['batch']}: {fast['time_s']:.0f} "
                f"({fast['time_s'] / best['time_s']:.2f}x) | "
                f"{fixed['time_s']:.0f} "
                f"({fixed['time_s'] / best['time_s']:.2f}x) |")
    print(f"\n| model | cluster | B_noise | E_min | chosen batch: plan | "
          f"s to target | highest-throughput batch: s (x chosen) | "
          f"batch {FIXED_BATCH}: s (x chosen) |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for row in tta_rows:
        print(row)


if __name__ == "__main__":
    main()
