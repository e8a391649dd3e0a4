#!/usr/bin/python3
"""NEUKONFIG's live switch, measured: a GPT served by a 2-stage pipeline on
this machine (`dist-run --serve`) is switched to another split of its layers
while a client sends requests, by pausing (stop the running job, then start
the new one) and by preparing the new partition beside the running one;
dist-run's measured downtime is printed beside `dist-opt --dist-replan`'s
prediction for the same two plans on `--dist-cluster=local:2`
(docs/resilience.md, "Switching a serving job live").

`dist-modelgen` writes the GPT (graph-only: the programs make its weights
from a hash of their names); `dist-opt --dist-report` plans the running
split, `dist-opt --dist-replan` the new one; `dist-compile -o JOB/` builds
both jobs; test/distributed/Inputs/serve_client.py writes the requests
(a global batch of token ids each, 0.05 s apart) and triggers the switch
after request 10.

The new job's start (the relaunch a pause pays) is measured first: one
calibration switch (`--relaunch-from`, default beside; not counted)
with `dist-run --record-relaunch=relaunch.json`, which `dist-opt
--dist-replan --dist-relaunch=relaunch.json` then prices
(docs/resilience.md, "The relaunch"). The table shows the prediction
with it, and without it (what the planner predicts when no relaunch is
given).

    /usr/bin/python3 bench/resilience/neukonfig_live.py --build build
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from benchutil import run  # noqa: E402

CLIENT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "test",
                      "distributed", "Inputs", "serve_client.py")
MEASURED = re.compile(r"downtime measured ([0-9.]+) s \((.*)\)")
PREDICTED = re.compile(r"downtime predicted ([0-9.]+) s \(([^)]*)\)")
PREPARED = re.compile(r"prepared \S+ in ([0-9.]+) s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--relaunch-from", choices=("beside", "pause"),
                    default="beside",
                    help="the calibration switch that records the relaunch")
    args = ap.parse_args()
    bin_dir = os.path.join(os.path.abspath(args.build), "bin")
    tool = lambda name: os.path.join(bin_dir, name)  # noqa: E731
    work = tempfile.mkdtemp(prefix="neukonfig-live-")
    onnx = os.path.join(work, "gpt.onnx")
    run([tool("dist-modelgen"), "gpt", "--layers", "6", "--hidden", "384",
         "--heads", "6", "--seq", "64", "--vocab", "2048", "-o", onnx])
    common = ["--input-shape=input_ids:4x64", "--dist-cluster=local:2",
              "--dist-batch=8"]
    running, new = "pp=2,mbs=4,stages=4", "pp=2,mbs=4,stages=8"
    old_report = os.path.join(work, "running.json")
    replan = os.path.join(work, "replan.json")
    bare = os.path.join(work, "replan-bare.json")
    relaunch = os.path.join(work, "relaunch.json")
    run([tool("dist-opt"), onnx, "--dist-weights=ignore", "--dist-mode=infer",
         f"--dist-plan={running}", f"--dist-report={old_report}", "-o",
         os.devnull] + common)
    jobs = {}
    for name, plan in (("running", running), ("new", new)):
        jobs[name] = os.path.join(work, name) + "/"
        run([tool("dist-compile"), onnx, "--dist-weights=ignore",
             f"--dist-plan={plan}", "-o", jobs[name]] + common)

    def switch(how, folder, extra):
        go = folder + ".go"
        cmd = [sys.executable, CLIENT, "run", folder, str(args.requests),
               "input_ids:i8:8x64", "--switch-at", "10", "--switch-file",
               go, "--pace", "0.05", "--", tool("dist-run"),
               f"--serve={folder}", f"--switch-to={jobs['new']}",
               f"--switch-on={go}", f"--switch={how}"] + extra + [
                   jobs["running"]]
        return cmd, subprocess.run(cmd, capture_output=True, text=True)

    # The calibration switch: records the new job's start.
    cmd, p = switch(args.relaunch_from, os.path.join(work, "calibrate"),
                    [f"--record-relaunch={relaunch}"])
    if p.returncode != 0 or not os.path.exists(relaunch):
        sys.exit("failed: " + " ".join(cmd) + "\n" + p.stderr)
    with open(relaunch) as f:
        recorded = json.load(f)["relaunch_s"]
    for report, extra in ((replan, [f"--dist-relaunch={relaunch}"]),
                          (bare, [])):
        run([tool("dist-opt"), onnx, "--dist-weights=ignore",
             "--dist-mode=infer", f"--dist-plan={new}",
             f"--dist-replan={old_report}", f"--dist-report={report}", "-o",
             os.devnull] + common + extra)
    with open(bare) as f:
        without = json.load(f)["replan"]
    rows = []
    for how in ("pause", "beside"):
        measured, phases, prepared, predicted = [], [], [], None
        for r in range(args.repeats):
            folder = os.path.join(work, f"{how}{r}")
            cmd, p = switch(how, folder, [f"--replan-report={replan}"])
            m = MEASURED.search(p.stderr)
            if p.returncode != 0 or not m:
                sys.exit("failed: " + " ".join(cmd) + "\n" + p.stderr)
            answers = sorted(e for e in os.listdir(folder)
                             if e.endswith(".out") or e.endswith(".err"))
            if answers != sorted(f"{k}.out" for k in range(args.requests)):
                sys.exit(f"{folder}: answers {answers}, expected each of "
                         f"0..{args.requests - 1} once")
            measured.append(float(m.group(1)))
            phases.append(m.group(2))
            if PREPARED.search(p.stderr):
                prepared.append(float(PREPARED.search(p.stderr).group(1)))
            predicted = PREDICTED.search(p.stderr)
        median = statistics.median(measured)
        bare_down = (without["pause_resume"]["downtime_s"] if how == "pause"
                     else without["prepare_beside"]["downtime_s"])
        rows.append((how, median, min(measured), max(measured),
                     phases[measured.index(median)] if median in measured
                     else phases[0],
                     statistics.median(prepared) if prepared else None,
                     predicted.group(1), predicted.group(2), bare_down))
    print(f"GPT 6 blocks, hidden 384 (11.5M parameters), global batch 8 x 64 "
          f"tokens; running {running} -> new {new} on 2 ranks; "
          f"{args.requests} requests, switch after request 10; "
          f"{args.repeats} run(s) each; relaunch recorded by a "
          f"{args.relaunch_from} switch: {recorded:.3f} s")
    print()
    print("| strategy | measured downtime s (median, min-max) | measured "
          "phases s (the median run) | prepared beside, measured s | "
          "**predicted** downtime s (local:2, recorded relaunch) | "
          "**predicted** phases s | measured / predicted | **predicted** "
          "without a relaunch s |")
    print("|---|---|---|---|---|---|---|---|")
    for how, med, lo, hi, ph, prep, pred, pph, bare_down in rows:
        print(f"| {'pause-and-resume' if how == 'pause' else 'prepare-beside'} "
              f"| {med:.3f} ({lo:.3f}-{hi:.3f}) | {ph} | "
              f"{'-' if prep is None else f'{prep:.3f}'} | {pred} | {pph} | "
              f"{med / float(pred):.2f} | {bare_down:.3f} |")


if __name__ == "__main__":
    main()
