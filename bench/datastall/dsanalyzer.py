#!/usr/bin/python3
"""DS-Analyzer (Mohan et al., VLDB 2021) through the product path: image
models on 8 V100s are preprocessing-stalled with few CPU cores per GPU and
fetch-stalled when the page cache holds only part of the dataset.

`dist-modelgen` writes ResNet-18 and ResNet-50 (224x224) as graph-only
ONNX; `dist-opt --print-cluster --dist-cluster=dgx-v100` gives the DGX-1
preset as YAML, whose `input:` line each row replaces (CPU cores per GPU,
page cache, storage read bandwidth); `dist-opt --dist-search
--dist-input=... --dist-report` plans each model and reports the stall.
Every figure is a simulator prediction (docs/cost-model.md, "Data
stalls"), not a measurement. The input per sample is ImageNet-1k's shape
(1.28 M JPEGs of about 110 KiB); the preprocessing cost per image
(--preprocess, default 6 ms of one core for decode, random-resized crop and
flip with PIL) is an assumption, not read from the paper.

    /usr/bin/python3 bench/datastall/dsanalyzer.py --build build
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchutil import run  # noqa: E402

MODELS = (("ResNet-18", 18), ("ResNet-50", 50))
DATASET_SAMPLES = 1.28e6
SAMPLE_KIB = 110
DATASET_GB = DATASET_SAMPLES * SAMPLE_KIB * 1024 / 1e9

# (label, CPU cores per GPU, page cache GB, storage read GB/s). The
# storage rates are assumed device classes: a SATA SSD (0.53 GB/s) and a
# hard disk (0.15 GB/s).
CONFIGS = (
    ("3 cores/GPU, dataset cached", 3, 1000, 0.53),
    ("24 cores/GPU, dataset cached", 24, 1000, 0.53),
    ("24 cores/GPU, cache 50%, SSD", 24, DATASET_GB * 0.5, 0.53),
    ("24 cores/GPU, cache 25%, HDD", 24, DATASET_GB * 0.25, 0.15),
    ("3 cores/GPU, cache 50%, SSD", 3, DATASET_GB * 0.5, 0.53),
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--batch-per-gpu", type=int, default=128)
    ap.add_argument("--preprocess", default="6ms",
                    help="CPU time of one image on one core")
    ap.add_argument("--dtype", default="fp16")
    args = ap.parse_args()
    opt = os.path.join(args.build, "bin", "dist-opt")
    gen = os.path.join(args.build, "bin", "dist-modelgen")
    spec = (f"bytes={SAMPLE_KIB}KiB,preprocess={args.preprocess},"
            f"dataset={DATASET_SAMPLES / 1e6:g}M")
    yaml = run([opt, "--print-cluster", "--dist-cluster=dgx-v100"])
    devices = 8
    batch = devices * args.batch_per_gpu
    rows, direction = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, depth in MODELS:
            model = os.path.join(tmp, f"resnet{depth}.onnx")
            run([gen, "resnet", "--depth", str(depth), "-o", model])
            for i, (label, cores, cache, storage) in enumerate(CONFIGS):
                cluster = os.path.join(tmp, f"c{i}.yaml")
                with open(cluster, "w") as f:
                    f.write(re.sub(
                        r"input: \{[^}]*\}",
                        f"input: {{storage_read_GBps: {storage}, "
                        f"page_cache_GB: {cache:.6g}, "
                        f"cpu_cores_per_device: {cores}}}", yaml))
                report = os.path.join(tmp, f"r{depth}-{i}.json")
                cmd = [opt, model, "--dist-weights=ignore",
                       f"--input-shape=input:{args.batch_per_gpu}x3x224x224",
                       f"--dist-cluster={cluster}", f"--dist-batch={batch}",
                       f"--dist-dtype={args.dtype}", "--dist-search",
                       "--dist-progress=never", f"--dist-input={spec}",
                       f"--dist-report={report}", "-o", os.devnull]
                run(cmd)
                with open(report) as f:
                    r = json.load(f)
                p, est = r["plan"], r["estimate"]
                d = est["data_stall"]
                rem = d["remedy"]
                remedy = []
                if rem["cpu_cores_per_device"] > 0:
                    remedy.append(f"{rem['cpu_cores_per_device']:.1f} "
                                  "cores/GPU")
                if rem["page_cache_GB"] > 0:
                    remedy.append(f"{rem['page_cache_GB']:.0f} GB cache or "
                                  f"{rem['storage_read_GBps']:.2f} GB/s")
                rows.append((name, label,
                             f"dp={p['dp']} tp={p['tp']} pp={p['pp']} "
                             f"mbs={p['mbs']}",
                             d["device_time_s"] * 1e3,
                             d["preprocess_time_s"] * 1e3,
                             d["fetch_time_s"] * 1e3,
                             est["iteration_time_s"] * 1e3,
                             d["preprocess_stall_s"] * 1e3,
                             d["fetch_stall_s"] * 1e3,
                             100 * d["stall_s"] / est["iteration_time_s"],
                             d["bound"], " + ".join(remedy) or "-"))
                direction.append((name, i, d))
    print(f"8x V100 (dgx-v100 preset, input line replaced), {args.dtype}, "
          f"global batch {batch} ({args.batch_per_gpu} per GPU), "
          f"--dist-input={spec} (dataset {DATASET_GB:.0f} GB)\n")
    print("| model | input side | plan | device ms | preprocess ms | "
          "fetch ms | iteration ms | prep stall ms | fetch stall ms | "
          "stall % | bound | to remove |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | "
              "{:.1f} | {:.0f}% | {} | {} |".format(*row))
    # The published direction: few cores -> preprocessing stall that many
    # cores remove; a partial cache -> fetch stall.
    ok = True
    for name, _ in MODELS:
        by = {i: d for n, i, d in direction if n == name}
        ok &= by[0]["preprocess_stall_s"] > 0
        ok &= by[1]["preprocess_stall_s"] == 0
        ok &= by[2]["fetch_stall_s"] > 0 or by[3]["fetch_stall_s"] > 0
        ok &= by[3]["fetch_stall_s"] >= by[2]["fetch_stall_s"]
    print("\ndirection (3 cores/GPU preprocessing-stalled, 24 not; a partial "
          "cache fetch-stalled): " + ("reproduced" if ok else "NOT reproduced"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
