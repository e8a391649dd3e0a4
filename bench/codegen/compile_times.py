#!/usr/bin/env python3
"""How long dist-compile takes to build a program, two builds side by side.

Compiles the same programs with each build's dist-compile, the builds
alternating run by run, and reports per program the wall time and the CPU
time (user + system of dist-compile and the C++ compiler it runs) of each
run, and their medians. CPU time is the figure to compare on a machine
shared with other work, where a compile waiting for a core gains wall time
and no CPU time. Then runs each build's programs once on the same inputs
and says whether their outputs are byte-identical.

The programs (every one from the product path: ONNX in, dist-compile out):
- `mlp`: the small MLP fixture's forward (test/fixtures/small).
- `gpt2-train`: the GPT-2 fixture's training step, batch 1 x 32, Adam.
- `gpt2-tp2-cp2-sp`: the same training step planned by `dist-opt
  --dist-plan=dp=1,tp=2,cp=2,sp=1` (four ranks' stage programs in one
  executable; compiled, not run: it needs mpirun).

    .venv/bin/python bench/codegen/compile_times.py --build OLD --build NEW
        [--runs 3] [--only NAME ...]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
FIX = os.path.join(ROOT, "test", "fixtures")
TRAIN = "loss=softmax-cross-entropy:labels optimizer=adam lr=0.001"


def programs(work):
    """name -> (planner arguments or None, dist-compile arguments, run
    arguments or None)."""
    gpt = os.path.join(FIX, "gpt2.onnx")
    ids = os.path.join(work, "ids.npy")
    labels = os.path.join(work, "labels.npy")
    x = os.path.join(work, "x.npy")
    return {
        "mlp": (None, [os.path.join(FIX, "small", "mlp_external.onnx"),
                       "--input-shape=x:2x8"], [f"x={x}"]),
        "gpt2-train": (None, [gpt, "--input-shape=input_ids:1x32",
                              "--train=" + TRAIN],
                       ["--steps", "3", f"input_ids={ids}",
                        f"labels={labels}"]),
        "gpt2-tp2-cp2-sp": ([gpt, "--input-shape=input_ids:1x32",
                             "--dist-cluster=cpu-xeon-2s:2",
                             "--dist-plan=dp=1,tp=2,cp=2,sp=1,mbs=1",
                             "--dist-batch=1"],
                            ["--train=" + TRAIN], None),
    }


def write_inputs(work):
    """The programs' inputs: fixed values, the same for both builds."""
    import numpy as np
    rng = np.random.default_rng(7)
    np.save(os.path.join(work, "x.npy"), rng.standard_normal((2, 8),
                                                             np.float32))
    np.save(os.path.join(work, "ids.npy"),
            rng.integers(0, 64, (1, 32)).astype(np.int64))
    np.save(os.path.join(work, "labels.npy"),
            rng.integers(0, 64, (1, 32)).astype(np.int64))


def timed(cmd):
    """Runs cmd; (wall seconds, CPU seconds of it and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                 before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", required=True,
                    help="a build folder (give two to compare)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    for b in a.build:
        for tool in ("dist-compile", "dist-opt"):
            if not os.path.exists(os.path.join(b, "bin", tool)):
                sys.exit(f"error: {b}/bin/{tool} not found; build it with "
                         f"`scripts/build.sh {b} {tool} DistRuntime`")
    work = tempfile.mkdtemp(prefix="compile-times-")
    write_inputs(work)
    progs = programs(work)
    names = [n for n in progs if not a.only or n in a.only]
    env = dict(os.environ)
    env.pop("DIST_COMPILE_CACHE", None)  # every run compiles
    times = {(n, bi): [] for n in names for bi in range(len(a.build))}
    for n in names:
        plan, args, _ = progs[n]
        for bi, b in enumerate(a.build):
            if plan:  # the planned IR, once per build
                out = os.path.join(work, f"{n}.{bi}.mlir")
                timed([os.path.join(b, "bin", "dist-opt")] + plan +
                      ["-o", out])
        for r in range(a.runs):
            for bi, b in enumerate(a.build):
                src = ([os.path.join(work, f"{n}.{bi}.mlir")] if plan
                       else [])
                exe = os.path.join(work, f"{n}.{bi}.bin")
                times[(n, bi)].append(timed(
                    [os.path.join(b, "bin", "dist-compile")] + src + args +
                    ["-o", exe]))
    load = os.getloadavg()[0]
    print(f"load average (1 min) at the end: {load:.1f}\n")
    print("| program | build | wall, each run | median | CPU, each run "
          "| median |")
    print("| --- | --- | --- | ---: | --- | ---: |")
    for n in names:
        for bi, b in enumerate(a.build):
            w = [t[0] for t in times[(n, bi)]]
            c = [t[1] for t in times[(n, bi)]]
            print(f"| {n} | {b} | {', '.join(f'{v:.2f}' for v in w)} s | "
                  f"{statistics.median(w):.2f} s | "
                  f"{', '.join(f'{v:.2f}' for v in c)} s | "
                  f"{statistics.median(c):.2f} s |")
    # The same outputs: each build's program on the same inputs.
    renv = dict(os.environ, OMP_NUM_THREADS="1")
    for n in names:
        run = progs[n][2]
        if run is None:
            continue
        outs = []
        for bi in range(len(a.build)):
            od = os.path.join(work, f"out-{n}-{bi}")
            os.makedirs(od)
            p = subprocess.run([os.path.join(work, f"{n}.{bi}.bin")] + run +
                               ["-o", od], capture_output=True, text=True,
                               env=renv)
            if p.returncode != 0:
                sys.exit(f"error: the {n} program of {a.build[bi]} failed:\n"
                         + p.stderr[-2000:])
            outs.append({f: open(os.path.join(od, f), "rb").read()
                         for f in sorted(os.listdir(od))})
        same = all(o == outs[0] for o in outs[1:])
        print(f"{n}: outputs ({', '.join(outs[0])}) "
              f"{'byte-identical' if same else 'DIFFER'} across the builds")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
