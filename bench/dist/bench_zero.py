#!/usr/bin/env python3
"""Memory per rank under ZeRO 0-3 (or any 2-rank plans): measured peak RSS
beside the planner's prediction, on the product path.

For each plan (by default dp=2 with ZeRO 0 to 3; `--plans` takes others,
e.g. "tp=2;tp=2,sp=1"), the same GPT (dist-modelgen gpt, graph-only:
weights initialized by the programs) is compiled with
`dist-compile --dist-plan=PLAN,mbs=ROWS --train=...` (ROWS: the global
batch over the plan's dp) and trained for a few steps under
`mpirun -np 2`, one thread per rank. Each rank runs
under a small launcher that reports the rank's peak resident set
(ru_maxrss of the program, the launcher's own pages not counted). The
time per step is the program's own `--time` mean (rank 0). The predicted
figure is what dist-compile prints for the plan (`stage 0 peak memory`),
a simulator prediction of the model's memory. The programs' peak also
holds what every program holds whatever the model (runtime, oneDNN, MPI):
the script prints it as the peak of the same job on a tiny GPT (1 layer,
hidden 64, vocabulary 256).

    python3 bench/dist/bench_zero.py --build build [--layers 4 --hidden 512]
        [--plans "dp=2,zero=0;dp=2,zero=1;dp=2,zero=2;dp=2,zero=3"]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

# Forks and execs the program; prints its peak RSS (KiB) on stderr after
# it exits, tagged with the MPI rank. Output of the program passes through.
LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
sys.stderr.write("peak-rss rank %s %d\n" % (rank, usage.ru_maxrss))
sys.exit(1 if status else 0)
"""


def mpirun():
    path = shutil.which("mpirun")
    if not path:
        sys.exit("mpirun not found: scripts/install-deps.sh installs openmpi-bin")
    return [path, "--allow-run-as-root", "--oversubscribe", "-np", "2"]


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p


def job(args, work, plan, layers, hidden, heads, vocab):
    """Compiles and runs one job of `plan` (2 ranks); returns (peak MB per
    rank, ms per step, predicted stage-0 peak as printed, last loss)."""
    bindir = os.path.join(args.build, "bin")
    stem = f"gpt{layers}_{hidden}_{vocab}"
    model = os.path.join(work, stem + ".onnx")
    if not os.path.exists(model):
        run([os.path.join(bindir, "dist-modelgen"), "gpt",
             f"--layers={layers}", f"--hidden={hidden}",
             f"--heads={heads}", f"--seq={args.seq}",
             f"--vocab={vocab}", "-o", model])
    keys = dict(kv.split("=") for kv in plan.split(","))
    rows = args.batch // int(keys.get("dp", 1))
    out = os.path.join(work, stem + "_" + re.sub(r"[^a-z0-9]+", "_", plan))
    p = run([os.path.join(bindir, "dist-compile"), model,
             f"--input-shape=input_ids:{rows}x{args.seq}",
             "--train=loss=softmax-cross-entropy:labels optimizer=adam lr=1e-4",
             f"--dist-plan={plan},mbs={rows}",
             f"--dist-batch={args.batch}", "-o", out + "/"])
    m = re.search(r"stage 0 peak memory ([0-9.]+ [KMG]iB)", p.stdout + p.stderr)
    predicted = m.group(1) if m else "?"
    rng = np.random.default_rng(0)
    ids = os.path.join(work, f"ids{vocab}.npy")
    labels = os.path.join(work, f"labels{vocab}.npy")
    if not os.path.exists(ids):
        np.save(ids, rng.integers(0, vocab, (args.batch, args.seq)))
        np.save(labels, rng.integers(0, vocab, (args.batch, args.seq)))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = run(mpirun() + ["/usr/bin/python3", "-S", "-c", LAUNCHER,
                        os.path.join(out, "program"), f"input_ids={ids}",
                        f"labels={labels}", "--steps", str(args.steps),
                        "--time", "-o", work], env=env)
    peaks = {int(r): int(k) / 1024.0 for r, k in
             re.findall(r"peak-rss rank (\d+) (\d+)", p.stderr)}
    t = re.search(r"([0-9.]+) ms", p.stdout + p.stderr)
    loss = re.findall(r"step \d+ loss ([0-9.]+)", p.stdout)
    return [peaks[r] for r in sorted(peaks)], t.group(1) if t else "?", \
        predicted, loss[-1] if loss else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=4, help="global batch")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--plans", default="dp=2,zero=0;dp=2,zero=1;dp=2,zero=2;"
                    "dp=2,zero=3", help="';'-separated 2-rank plans (mbs added)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dist-bench-zero-")
    try:
        print(f"GPT {a.layers} layers, hidden {a.hidden}, heads {a.heads}, "
              f"seq {a.seq}, vocab {a.vocab}; global batch {a.batch}, "
              f"Adam, {a.steps} steps, 1 thread per rank")
        base, _, _, _ = job(a, work, "dp=2", 1, 64, 4, 256)
        print(f"floor (the job on a tiny GPT: 1 layer, hidden 64, vocabulary "
              f"256): peak RSS per rank {base[0]:.0f} / {base[1]:.0f} MB\n")
        print("| plan | rank 0 peak MB | rank 1 peak MB | predicted stage peak "
              "(dist-compile) | ms/step (rank 0) | last loss |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for plan in a.plans.split(";"):
            peaks, ms, predicted, loss = job(a, work, plan, a.layers,
                                             a.hidden, a.heads, a.vocab)
            print(f"| `{plan}` | {peaks[0]:.0f} | {peaks[1]:.0f} | {predicted} "
                  f"| {ms} | {loss} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
