#!/usr/bin/env python3
"""The MoE cases' own checks over learning rates and data sets.

For each run_distributed.py case named, each --data-seed and each learning
rate: the case's single-process program (the whole batch, the case's
optimizer at that rate) run as the case runs it (checked_single), its
trajectory's smallest routing margin (routing_margins) and its round-off
floor (roundoff_floor: its own spread from initial weights 2^-24 apart),
with the tensor that sets the floor. This is how the MoE cases' learning
rates were chosen (docs/distributed.md, "Numerics notes"); the cases
check the same two numbers at their own rate. Single-process runs only; set
DIST_COMPILE_CACHE to share the compiles between calls.

    .venv/bin/python test/numerics/moe_floor_survey.py --build build \\
        --lr 0.1,0.05,0.02 --data-seeds own,1,2,3 \\
        llama_moe_momentum_dp2_ep2_z1 llama_moe_momentum_dp4_ep2
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import run_distributed as rd  # noqa: E402


def spread(state, draws=2):
    """The tensor of `state` that roundoff_floor's perturbed runs (its
    `state`_end1.. folders) moved most, relative to its largest |value|."""
    worst, name = 0.0, None
    for f in sorted(os.listdir(state)):
        if not f.endswith(".npy"):
            continue
        want = np.load(os.path.join(state, f)).astype(np.float64)
        scale = max(float(np.max(np.abs(want))), 1e-30) if want.size else 1.0
        for k in range(1, draws + 1):
            got = np.load(os.path.join(f"{state}_end{k}", f))
            moved = float(np.max(np.abs(got - want), initial=0.0)) / scale
            if moved > worst:
                worst, name = moved, f[:-4]
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(rd.ROOT, "build"))
    ap.add_argument("--lr", default="0.02",
                    help="comma-separated learning rates (default 0.02)")
    ap.add_argument("--data-seeds", default="own",
                    help="comma-separated --data-seed values; 'own' for the "
                         "cases' own data (default)")
    ap.add_argument("cases", nargs="+", help="run_distributed.py case names "
                    "(a training case with `routing` data: the MoE cases)")
    a = ap.parse_args()
    for seed in a.data_seeds.split(","):
        if seed != "own" and not seed.isdigit():
            ap.error(f"--data-seeds: '{seed}' is neither 'own' nor a "
                     "non-negative integer (run_distributed.py --data-seed)")
    for lr in a.lr.split(","):
        if not re.fullmatch(r"\d*\.?\d+(e-?\d+)?", lr) or float(lr) <= 0:
            ap.error(f"--lr: '{lr}' is not a positive learning rate (as "
                     "--train's lr=, e.g. 0.02)")
    compiler = common.tool(a.build, "dist-compile")
    rd.BIN[0] = os.path.dirname(compiler)
    work = tempfile.mkdtemp(prefix="dist-moe-floor-")
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    try:
        survey(a, compiler, work, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def survey(a, compiler, work, env):
    """Prints one line per case, data set and learning rate of `a`."""
    for seed in a.data_seeds.split(","):
        rd.DATA_SEED[0] = None if seed == "own" else int(seed)
        cases = dict(rd.cases())
        for name in a.cases:
            c = cases.get(name)
            if c is None or "train" not in c or "plan" not in c:
                sys.exit(f"error: {name} is not a run_distributed.py "
                         "pipeline training case; name one of the "
                         "llama_moe_ cases")
            model = c["model"](work) if callable(c["model"]) else c["model"]
            first, dims = c["input_shape"].split(":")
            whole = first + ":" + "x".join([str(c["batch"])] +
                                           dims.split("x")[1:])
            for lr in a.lr.split(","):
                train = re.sub(r"\blr=\S+", "lr=" + lr, c["train"])
                try:
                    text, state, margins, floor = rd.checked_single(
                        work, [compiler, model, "--input-shape=" + whole,
                               "--train=" + train, "-o", "one.bin"],
                        model, c["feeds"], c["steps"], env)
                except RuntimeError as e:
                    sys.exit(f"error: {name}, data {seed}, lr {lr}: {e}")
                curve = rd.curve_of(text)
                print(f"{name} data {seed} lr {lr}: round-off floor "
                      f"{floor:.2e} ({spread(state)}), routing margin "
                      f"{min(m for m, _ in margins):.2e}, loss "
                      f"{curve[0]:.4g} -> {curve[-1]:.4g}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
