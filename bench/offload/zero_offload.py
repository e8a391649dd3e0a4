#!/usr/bin/python3
"""ZeRO-Offload (USENIX ATC'21) through the product path: how large a GPT
one 32 GB V100 trains with and without offloading the optimizer, and that
offload is chosen only where nothing fits without it.

`dist-modelgen` writes each GPT as graph-only ONNX; `dist-opt --dist-search
--dist-devices=1` plans it on one V100 of the `dgx-v100` preset (its node:
512 GB of host memory, 6 GB/s of PCIe per GPU, 92 GB/s of DRAM; docs/
cost-model.md, "Storage tiers") twice: with `--dist-search=offload=none`
(what fits in device memory alone) and with offload allowed (the default
search), in fp16 mixed precision with Adam. Where both fit, it also forces `offload=opt` to show what offload
would cost there. Every figure is a prediction of the cost model and the
simulator, not a measurement.

    /usr/bin/python3 bench/offload/zero_offload.py --build build
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# (layers, hidden): GPT-2-style shapes of about 1, 2, 4, 6, 10 and 13
# billion parameters (the paper's 10B is 50 x 4096 and 13B 64 x 4096
# scaled in its depth).
SIZES = ((20, 2048), (40, 2048), (64, 2304), (53, 3072), (50, 4096),
         (64, 4096))


def run(cmd, may_fail=False):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 and not may_fail:
        sys.exit("failed: " + " ".join(cmd) + "\n" + p.stderr)
    return p


class Bench:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.opt = os.path.join(args.build, "bin", "dist-opt")
        self.gen = os.path.join(args.build, "bin", "dist-modelgen")

    def model(self, layers, hidden):
        path = os.path.join(self.tmp, f"gpt{layers}x{hidden}.onnx")
        if not os.path.exists(path):
            run([self.gen, "gpt", "--layers", str(layers), "--hidden",
                 str(hidden), "--heads", str(hidden // 128), "--seq",
                 str(self.args.seq), "--vocab", "50257", "-o", path])
        return path

    def search(self, model, constraint):
        """The report of the best plan, or None when nothing fits."""
        report = os.path.join(self.tmp, "r.json")
        if os.path.exists(report):
            os.remove(report)
        cmd = [self.opt, model, "--dist-weights=ignore",
               f"--input-shape=input_ids:1x{self.args.seq}",
               f"--dist-cluster={self.args.cluster}", "--dist-devices=1",
               # V100s train in fp16 mixed precision (no bf16).
               "--dist-dtype=fp16",
               "--dist-search" + (f"={constraint}" if constraint else ""),
               f"--dist-batch={self.args.batch}", f"--dist-report={report}",
               "--dist-progress=never", "-o", os.devnull]
        p = run(cmd, may_fail=True)
        if p.returncode != 0:
            if "no plan fits in memory" in p.stderr:
                return None
            sys.exit("failed: " + " ".join(cmd) + "\n" + p.stderr)
        with open(report) as f:
            return json.load(f)


def label(r):
    p = r["plan"]
    return (f"mbs={p['mbs']} recompute={p['recompute']}"
            + (f" offload={p['offload']}" if p["offload"] != "none" else ""))


def host_gb(r):
    off = r["estimate"].get("offload")
    if not off:
        return "-"
    return f"{off[0]['tier_bytes']['host'] / 1e9:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--cluster", default="dgx-v100")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        b = Bench(args, tmp)
        print(f"GPT (seq {args.seq}, vocab 50257), batch {args.batch}, "
              f"one V100 32GB of {args.cluster} (--dist-devices=1)")
        head = ("| params | layers x hidden | without offload: plan | "
                "s/iter | TFLOP/s | searched plan | s/iter | TFLOP/s | "
                "host GB | forced offload=opt s/iter |")
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        largest = {"none": 0, "any": 0}
        chose_offload_where_both_fit = False
        for layers, hidden in SIZES:
            model = b.model(layers, hidden)
            # 12 l h^2 + the embeddings (Megatron's count, without biases).
            n = 12 * layers * hidden ** 2 + (50257 + args.seq) * hidden
            none = b.search(model, "offload=none")
            best = b.search(model, "")
            forced = b.search(model, "offload=opt") if none else None
            cells = [f"{n / 1e9:.1f}B", f"{layers} x {hidden}"]
            for r in (none, best):
                if r is None:
                    cells += ["does not fit", "-", "-"]
                else:
                    e = r["estimate"]
                    cells += [label(r), f"{e['iteration_time_s']:.2f}",
                              f"{e['model_tflops_per_device']:.1f}"]
            cells.append(host_gb(best) if best else "-")
            cells.append(f"{forced['estimate']['iteration_time_s']:.2f}"
                         if forced else "-")
            print("| " + " | ".join(cells) + " |")
            if none:
                largest["none"] = n
                if best and best["plan"]["offload"] != "none":
                    chose_offload_where_both_fit = True
            if best:
                largest["any"] = n
        print(f"largest trained: {largest['none'] / 1e9:.1f}B without "
              f"offload, {largest['any'] / 1e9:.1f}B with it "
              f"({largest['any'] / max(largest['none'], 1):.1f}x)")
        print("offload chosen where the model fits without it: "
              + ("yes" if chose_offload_where_both_fit else "no"))


if __name__ == "__main__":
    main()
