#!/usr/bin/python3
"""Asteroid-style recovery through the product path: a data-parallel
training job on 2 CPU ranks loses rank 1 mid-run; `dist-run --elastic`
compiles the job again for the survivor and resumes it from its last
checkpoint, against restarting the training from step 1 on the survivor.

The model is `dist-modelgen gpt` (graph-only weights), trained with Adam
for --steps steps under dp=2; DISTRT_FAULT kills rank 1 right after step
--fault (docs/cli.md, dist-run --elastic). Every figure is measured wall
time on this machine (one thread per rank), not a prediction:

- no fault: the 2-rank job alone;
- elastic, checkpoint every N: dist-run --elastic --elastic-every=N with
  the fault (the steps since the last checkpoint run again, the job is
  compiled for one rank and restarted from the checkpoint);
- restart from step 1: the 2-rank job until the fault, then the whole
  training again on the survivor (no checkpoint).

    /usr/bin/python3 bench/resilience/elastic.py --build build
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchutil import run, timed  # noqa: E402
from gptjob import gpt_batch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--fault", type=int, default=200,
                    help="the step after which rank 1 is killed")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--every", default="10,50",
                    help="checkpoint intervals of the elastic rows")
    a = ap.parse_args()
    tools = os.path.join(a.build, "bin")
    with tempfile.TemporaryDirectory(prefix="elastic-") as tmp:
        model, feeds = gpt_batch(tools, tmp, a.hidden, a.seq)
        train = "loss=softmax-cross-entropy:labels optimizer=adam lr=1e-3"
        job = os.path.join(tmp, "job") + "/"
        run([os.path.join(tools, "dist-compile"), model,
             f"--input-shape=input_ids:2x{a.seq}", "--dist-plan=dp=2,mbs=2",
             "--dist-batch=8", "--train=" + train, "-o", job])
        one = os.path.join(tmp, "one") + "/"
        run([os.path.join(tools, "dist-compile"), model,
             f"--input-shape=input_ids:2x{a.seq}", "--dist-plan=dp=1,mbs=2",
             "--dist-batch=8", "--train=" + train, "-o", one])
        dist_run = os.path.join(tools, "dist-run")
        fault = {"DISTRT_FAULT": f"kill:1:{a.fault}"}
        steps = ["--steps", str(a.steps)]

        rows = []
        base, p = timed([dist_run, job] + feeds + steps)
        if p.returncode:
            sys.exit(p.stderr[-2000:])
        rows.append(("no fault (dp=2)", base, 0))
        for every in [int(e) for e in a.every.split(",")]:
            ck = os.path.join(tmp, f"ck{every}")
            t, p = timed([dist_run, f"--elastic={ck}",
                          f"--elastic-every={every}", job] + feeds + steps,
                         fault)
            if p.returncode:
                sys.exit(p.stderr[-2000:])
            redone = a.fault - a.fault // every * every
            rows.append((f"elastic, checkpoint every {every} steps", t, redone))
        # Restart from scratch: the 2-rank job until the fault, then the
        # whole run on the survivor.
        t1, p = timed([dist_run, job] + feeds + steps, fault)
        if p.returncode == 0:
            sys.exit("the fault did not end the 2-rank job")
        t2, p = timed([dist_run, one] + feeds + steps)
        if p.returncode:
            sys.exit(p.stderr[-2000:])
        rows.append(("restart from step 1 on the survivor", t1 + t2, a.fault))

        print(f"dist-modelgen gpt (4 layers, hidden {a.hidden}, seq {a.seq}, "
              f"vocab 2048), "
              f"Adam, global batch 8, {a.steps} steps, dp=2 on 2 CPU ranks; "
              f"rank 1 killed after step {a.fault}\n")
        print("| run | wall time (s) | steps computed again | time lost to the "
              "fault (s) |")
        print("|---|---:|---:|---:|")
        for name, t, redone in rows:
            lost = "-" if name.startswith("no fault") else f"{t - base:.1f}"
            print(f"| {name} | {t:.1f} | {redone} | {lost} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
