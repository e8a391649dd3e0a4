#!/usr/bin/python3
"""Branch-parallel inference of hierarchical DNNs on edge devices: the
trunk and the heads of `dist-modelgen trunk-branches` placed on devices by
`dist-opt --dist-branches` (docs/search.md, "Branch placement for
inference"), against the best single device and the best plan of the
chain search (pipeline stages, data and tensor parallelism) for the same
batch.

For each row: `dist-modelgen trunk-branches` with the row's heads and
head depth (trunk: 2 Gemm+Relu layers of 1024 on 784 inputs; heads:
Gemm+Relu layers of 1024 and a 10-class Gemm), then `dist-opt
--dist-mode=infer --dist-search --dist-branches --dist-batch=B
--dist-report`; the row is the report's `branches` object. Every figure is
a prediction of the cost model, not a measurement.

    /usr/bin/python3 bench/edgecloud/branches.py --build build
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchutil import run  # noqa: E402

# (cluster, heads, head layers, batch)
ROWS = [(cluster, heads, depth, batch)
        for cluster in ("arm-board-wifi", "arm-board-ethernet",
                        "edge-cloud-wifi:4")
        for heads, depth in ((2, 2), (3, 2), (4, 2), (3, 6), (8, 2))
        for batch in (1, 8)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    opt = os.path.join(args.build, "bin", "dist-opt")
    gen = os.path.join(args.build, "bin", "dist-modelgen")
    work = tempfile.mkdtemp(prefix="branches-")
    print("| # | cluster | heads x head layers | batch | placement (device of trunk, heads..., tail) | latency ms | one device ms | chain plan | chain ms | vs one device | vs chain | recorded |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    commands = []
    for i, (cluster, heads, depth, batch) in enumerate(ROWS, 1):
        model = os.path.join(work, f"tb-{heads}-{depth}-{batch}.onnx")
        gen_cmd = [gen, "trunk-branches", "--branches", str(heads),
                   "--branch-layers", str(depth), "--micro-batch", str(batch),
                   "-o", model]
        run(gen_cmd)
        rep = os.path.join(work, f"{i}.json")
        opt_cmd = [opt, model, "--dist-weights=ignore",
                   f"--dist-cluster={cluster}", "--dist-mode=infer",
                   "--dist-search", "--dist-branches", f"--dist-batch={batch}",
                   "--dist-report=" + rep, "-o", os.devnull]
        run(opt_cmd)
        with open(rep) as f:
            b = json.load(f)["branches"]
        best, one = b["best"], b["single_device"]
        chain = b["chain"]
        chain_ms = chain.get("latency_s")
        plan = chain.get("plan", "none: " + chain.get("problem", ""))
        plan = plan.split(",schedule=")[0].replace(",", " ")
        print(f"| {i} | {cluster} | {heads} x {depth} | {batch} | "
              f"{best['piece_devices']} | {best['latency_s'] * 1e3:.2f} | "
              f"{one['latency_s'] * 1e3:.2f} | {plan} | "
              f"{chain_ms * 1e3 if chain_ms else float('nan'):.2f} | "
              f"{one['latency_s'] / best['latency_s']:.2f}x | "
              + (f"{chain_ms / best['latency_s']:.2f}x" if chain_ms else "-")
              + f" | {b['recorded']} |")
        commands.append(f"{i}. `dist-modelgen trunk-branches --branches {heads} "
                        f"--branch-layers {depth} --micro-batch {batch} -o "
                        f"tb.onnx`; `dist-opt tb.onnx --dist-weights=ignore "
                        f"--dist-cluster={cluster} --dist-mode=infer "
                        f"--dist-search --dist-branches --dist-batch={batch} "
                        f"--dist-report={i}.json -o /dev/null`")
    print("\nEach row's commands:\n")
    print("\n".join(commands))


if __name__ == "__main__":
    main()
