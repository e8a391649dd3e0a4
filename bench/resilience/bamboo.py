#!/usr/bin/python3
"""Bamboo (NSDI'23) through the product path: redundant computation
against checkpoint-restart (and elastic restarts on the survivors) on
preemptible nodes, across preemption rates.

`dist-modelgen` writes a GPT as graph-only ONNX; `dist-opt --print-cluster`
gives the `aws-p3-spot` preset (p3.2xlarge: one V100 16GB per node) as YAML,
whose `preemptions_per_node_hour` each row replaces; `dist-opt --dist-search
--dist-resilience=MODE --dist-preemptions=SEED --dist-report` plans the
model for each mode and rate. Every figure is a simulator prediction
(docs/resilience.md). The crossover is the rate below which checkpointing
delivers more samples/s than redundant computation, found by bisection
over the rate (each step two more searches).

    /usr/bin/python3 bench/resilience/bamboo.py --build build
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

MODES = ("none", "checkpoint", "redundant", "elastic")


class Bench:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.opt = os.path.join(args.build, "bin", "dist-opt")
        gen = os.path.join(args.build, "bin", "dist-modelgen")
        self.model = os.path.join(tmp, "gpt.onnx")
        run([gen, "gpt", "--layers", str(args.layers), "--hidden",
             str(args.hidden), "--heads", str(args.heads), "--seq",
             str(args.seq), "--vocab", "50257", "-o", self.model])
        self.yaml = run([self.opt, "--print-cluster",
                         f"--dist-cluster=aws-p3-spot:{args.nodes}"])
        if args.replacement is not None:
            self.yaml = re.sub(r"replacement_s: [0-9.e+-]+",
                               f"replacement_s: {args.replacement}",
                               self.yaml)
        if args.relaunch is not None:
            self.yaml = re.sub(r"checkpoint_GBps: ([0-9.e+-]+)",
                               rf"checkpoint_GBps: \1, relaunch_s: "
                               rf"{args.relaunch}", self.yaml)

    def plan(self, rate, mode):
        """The report's plan and resilience figures for MODE at RATE."""
        tag = f"{rate:g}-{mode}"
        cluster = os.path.join(self.tmp, f"c-{tag}.yaml")
        with open(cluster, "w") as f:
            f.write(re.sub(r"preemptions_per_node_hour: [0-9.e+-]+",
                           f"preemptions_per_node_hour: {rate!r}",
                           self.yaml))
        report = os.path.join(self.tmp, f"r-{tag}.json")
        cmd = [self.opt, self.model, "--dist-weights=ignore",
               f"--dist-cluster={cluster}", "--dist-search",
               f"--dist-batch={self.args.batch}", f"--dist-resilience={mode}",
               f"--dist-report={report}", "--dist-progress=never",
               "-o", os.devnull]
        if mode != "none":
            cmd.append(f"--dist-preemptions={self.args.seed}")
        run(cmd)
        with open(report) as f:
            r = json.load(f)
        p = r["plan"]
        label = (f"dp={p['dp']} tp={p['tp']} pp={p['pp']} mbs={p['mbs']} "
                 f"{p['schedule']}"
                 + (f" zero={p['zero']}" if p["zero"] else "")
                 + (f" recompute={p['recompute']}"
                    if p["recompute"] != "none" else ""))
        return label, r["resilience"]

    def ratio(self, rate):
        _, c = self.plan(rate, "checkpoint")
        _, r = self.plan(rate, "redundant")
        return r["expected_samples_per_s"] / c["expected_samples_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replacement", type=float, default=None,
                    help="replacement_s (default: the preset's)")
    ap.add_argument("--relaunch", type=float, default=None,
                    help="relaunch_s: process start per restart (default 0)")
    ap.add_argument("--rates", default="0.01,0.02,0.05,0.1,0.16,0.25,0.33,0.5")
    args = ap.parse_args()
    rates = [float(x) for x in args.rates.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        b = Bench(args, tmp)
        print(f"GPT {args.layers}x{args.hidden} (seq {args.seq}), batch "
              f"{args.batch}, aws-p3-spot:{args.nodes}; seed {args.seed}, "
              f"1000 h injected")
        head = (f"| rate /node-h | mode | plan | iter s | expected samples/s "
                f"| injected samples/s | events | restarts | lost s/event "
                f"| $/1k samples | vs checkpoint |")
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        ratios = []
        for rate in rates:
            rows = {m: b.plan(rate, m) for m in MODES}
            ckpt = rows["checkpoint"][1]["expected_samples_per_s"]
            for m in MODES:
                label, r = rows[m]
                inj = r.get("injected", {})
                exp = r["expected_samples_per_s"]
                usd = r["usd_per_sample"]
                print(f"| {rate:g} | {m} | {label} | "
                      f"{r['iteration_time_s']:.3f} | {exp:.2f} | "
                      + (f"{inj['samples_per_s']:.2f} | {inj['events']} | "
                         f"{inj['restarts']} | {r['lost_s_per_event']:.0f} | "
                         if inj else "- | - | - | - | ")
                      + (f"{1000 * usd:.3f} | " if usd is not None else
                         "- | ")
                      + f"{exp / ckpt:.2f} |")
            ratios.append(rows["redundant"][1]["expected_samples_per_s"] / ckpt)
        # The crossover: bisect (geometrically) between the last rate where
        # checkpointing wins and the first where redundancy does.
        lo = hi = None
        for rate, q in zip(rates, ratios):
            if q < 1:
                lo = rate
            elif hi is None and lo is not None:
                hi = rate
        if lo is None or hi is None:
            print("no crossover in the rates given "
                  + ("(redundant wins at every rate)" if lo is None else
                     "(checkpoint wins at every rate)"))
            return
        for _ in range(7):
            mid = (lo * hi) ** 0.5
            if b.ratio(mid) < 1:
                lo = mid
            else:
                hi = mid
        print(f"crossover: checkpointing delivers more below about "
              f"{(lo * hi) ** 0.5:.4f} preemptions per node-hour "
              f"(bisected to [{lo:.4f}, {hi:.4f}])")


if __name__ == "__main__":
    main()
