#!/usr/bin/python3
"""Bamboo's runtime half through the product path: a pipeline training
job on 2 CPU ranks loses rank 1 mid-run; `dist-run --redundant` resumes it
on the survivor from the copies its ranks made after every step, against
`dist-run --elastic`, which resumes from its last checkpoint on disk.

The model is `dist-modelgen gpt` (graph-only weights), trained with Adam
under pp=2 (1F1B, 4 micro-batches of 2) for --steps steps; DISTRT_FAULT
kills rank 1 right after step --fault (docs/cli.md). Every figure is
measured wall time on this machine (one thread per rank), not a
prediction; the planner's `--dist-resilience=redundant` prices Bamboo's
redundant forwards, not these copies, so no row has a predicted figure.

- no fault: the job alone, with --redundant, with --elastic (the copies'
  and the checkpoints' cost; both also compile the standby job for one
  rank while the job runs, which takes cores from it);
- a fault: --redundant and --elastic with the same survivors' job. The
  extra wall time is against the job alone without a fault: the copies or
  checkpoints, the standby compile, the restart and the steps computed
  again (the survivor runs the steps after the fault at its own speed in
  both modes).

    /usr/bin/python3 bench/resilience/bamboo_runtime.py --build build
"""
import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchutil import run, timed  # noqa: E402
from gptjob import gpt_batch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--fault", type=int, default=45,
                    help="the step after which rank 1 is killed")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--every", default="1,10",
                    help="checkpoint intervals of the elastic rows")
    ap.add_argument("--dir", default="/dev/shm",
                    help="where the copies and checkpoints go")
    a = ap.parse_args()
    tools = os.path.join(a.build, "bin")
    dist_run = os.path.join(tools, "dist-run")
    with tempfile.TemporaryDirectory(prefix="bamboo-rt-") as tmp, \
            tempfile.TemporaryDirectory(prefix="bamboo-rt-",
                                        dir=a.dir) as mem:
        model, feeds = gpt_batch(tools, tmp, a.hidden, a.seq)
        train = "loss=softmax-cross-entropy:labels optimizer=adam lr=1e-3"
        job = os.path.join(tmp, "job") + "/"
        run([os.path.join(tools, "dist-compile"), model,
             f"--input-shape=input_ids:2x{a.seq}",
             "--dist-plan=pp=2,mbs=2,schedule=1f1b", "--dist-batch=8",
             "--train=" + train, "-o", job])
        fault = {"DISTRT_FAULT": f"kill:1:{a.fault}"}
        steps = ["--steps", str(a.steps)]

        def go(name, extra, env=None, fails=False):
            t, p = timed([dist_run] + extra + [job] + feeds + steps, env)
            if p.returncode:
                sys.exit(name + ":\n" + p.stderr[-3000:])
            copy = re.findall(r"the copies took ([0-9.]+) ms per step per "
                              r"rank, ([0-9.]+) ms of it waiting for the "
                              r"successor's state \(([0-9]+) bytes", p.stderr)
            return t, p, copy

        rows = []
        base, _, _ = go("no fault", [])
        rows.append(("no fault, no copies", base, "-", "-"))
        red, _, copy = go("no fault, --redundant",
                          [f"--redundant={mem}/r"])
        rows.append(("no fault, --redundant", red,
                     f"{copy[0][0]} ({copy[0][1]} waiting; "
                     f"{int(copy[0][2]) / 1e6:.1f} MB sent)", "-"))
        el = {}
        for every in [int(e) for e in a.every.split(",")]:
            el[every], _, _ = go(f"no fault, --elastic every {every}",
                                 [f"--elastic={mem}/e{every}",
                                  f"--elastic-every={every}"])
            rows.append((f"no fault, --elastic every {every}", el[every],
                         "-", "-"))
        t, p, _ = go("fault, --redundant", [f"--redundant={mem}/rf"], fault)
        if "was lost" not in p.stderr:
            sys.exit("the fault did not happen:\n" + p.stderr[-2000:])
        rows.append((f"fault after step {a.fault}, --redundant", t, "-",
                     "1 (the step in flight)"))
        for every in el:
            t, p, _ = go(f"fault, --elastic every {every}",
                         [f"--elastic={mem}/ef{every}",
                          f"--elastic-every={every}"], fault)
            redone = a.fault - a.fault // every * every + 1
            rows.append((f"fault after step {a.fault}, --elastic every "
                         f"{every}", t, "-", f"{redone}"))

        print(f"dist-modelgen gpt (4 layers, hidden {a.hidden}, seq {a.seq}, "
              f"vocab 2048), Adam, global batch 8, {a.steps} steps, pp=2 "
              f"(1F1B, mbs 2) on 2 CPU ranks, copies and checkpoints in "
              f"{a.dir}; rank 1 killed after step {a.fault}; every figure "
              f"measured (no prediction)\n")
        print("| run | wall time (s), measured | extra against the job alone "
              "(s), measured | copies per step per rank in the program (ms), "
              "measured | steps computed again | predicted |")
        print("|---|---:|---:|---:|---:|---|")
        for name, t, inprog, redone in rows:
            extra = "-" if name == "no fault, no copies" else f"{t - base:.1f}"
            print(f"| {name} | {t:.1f} | {extra} | {inprog} | {redone} | "
                  f"none (not modelled) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
