#!/usr/bin/env python3
"""Kernel by kernel: a dist-compile program against onnxruntime's profiler.

For one exported model (bench/codegen/make_models.py) this script

1. runs onnxruntime (CPU execution provider, default optimization level,
   1 intra-op thread, not spinning) --runs times with
   `SessionOptions.enable_profiling` and takes, per node, the least of its
   kernel times over the runs;
2. runs the program compiled by BUILD's dist-compile (1 OpenMP thread,
   passive waits) with DNNL_VERBOSE=1 for 2 + --runs runs, takes the exec
   lines of the last --runs (the count per run is the difference between a
   3-run and a 2-run program, since the first run also reorders weights)
   and, per primitive of a run, the least of its times;
3. reports the program's minor page faults and system CPU time per run
   (os.wait4 of a 1-run and an 11-run program, the difference over 10).

The least time of each kernel over many runs is what it takes when the
process is not preempted or sharing a core's caches: on a machine loaded
by other work (CPU time would count cache misses caused by others) it is
the figure that compares the two kernel by kernel. Sums of least times are
lower than either side's time per run. Kernels that are not oneDNN
primitives (the program's generated loops, copies, the runtime's own
kernels) are not in step 2: `--profile` times those.

    .venv/bin/python bench/codegen/op_times.py --build build \\
        --model build/bench-models/resnet18.onnx [--runs 12] [--top 20]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

from bench_inputs import make_inputs

ENV = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")


def ort_least(path, feeds, runs, tmp):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tmp, "ort")
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(runs):
        s.run(None, feeds)
    with open(s.end_profiling()) as f:
        events = json.load(f)
    times, kind = collections.defaultdict(list), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            node = e["name"][:-len("_kernel_time")]
            times[node].append(e["dur"] / 1e3)
            kind[node] = e["args"].get("op_name", "?")
    return {n: (kind[n], min(t)) for n, t in times.items()}


def exec_lines(cmd, runs):
    p = subprocess.run(cmd + ["--repeat", str(runs)], capture_output=True,
                       text=True, env=dict(ENV, DNNL_VERBOSE="1"))
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{p.stderr[-2000:]}")
    return [l.split(",") for l in p.stdout.splitlines()
            if l.startswith("onednn_verbose,exec")]


def program_least(cmd, runs):
    per = len(exec_lines(cmd, 3)) - len(exec_lines(cmd, 2))
    lines = exec_lines(cmd, runs + 2)[-per * runs:]
    out = []
    for i in range(per):
        f = lines[i]
        # impl, post-ops / algorithm, problem: the columns of oneDNN 2.x
        what = " ".join(x for x in (f[4], f[7].strip(), f[8].strip()) if x)
        out.append((what, f[-2], min(float(lines[r * per + i][-1])
                                     for r in range(runs))))
    return out


def faults_and_system(cmd):
    def usage(n):
        p = subprocess.Popen(cmd + ["--repeat", str(n)],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=ENV)
        _, status, ru = os.wait4(p.pid, 0)
        if status != 0:
            sys.exit(f"{cmd[0]} failed (status {status})")
        return ru.ru_minflt, ru.ru_stime
    (f1, s1), (f11, s11) = usage(1), usage(11)
    return (f11 - f1) / 10, (s11 - s1) / 10 * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs must be at least 1, got {args.runs}")
    dc = os.path.join(args.build, "bin", "dist-compile")
    if not os.path.exists(dc):
        ap.error(f"no dist-compile at '{dc}': build it first")
    if not os.path.exists(args.model):
        ap.error(f"no model at '{args.model}': export it with "
                 "bench/codegen/make_models.py")
    with tempfile.TemporaryDirectory() as tmp:
        feeds, inputs, _ = make_inputs(args.model, tmp)
        exe = os.path.join(tmp, "program")
        p = subprocess.run([dc, args.model, "-o", exe], capture_output=True,
                           text=True)
        if p.returncode != 0:
            sys.exit(f"{dc} failed:\n{p.stderr[-3000:]}")
        cmd = [exe] + inputs + ["-o", tmp]
        ort_nodes = ort_least(args.model, feeds, args.runs, tmp)
        prims = program_least(cmd, args.runs)
        faults, system = faults_and_system(cmd)

    by_kind = collections.defaultdict(float)
    for kind, t in ort_nodes.values():
        by_kind[kind] += t
    print(f"onnxruntime: {len(ort_nodes)} nodes, least times summed "
          f"{sum(by_kind.values()):.2f} ms")
    for kind, t in sorted(by_kind.items(), key=lambda x: -x[1]):
        print(f"  {t:8.3f} ms  {kind}")
    print(f"  slowest {args.top} nodes:")
    for node, (kind, t) in sorted(ort_nodes.items(),
                                  key=lambda x: -x[1][1])[:args.top]:
        print(f"  {t:8.3f} ms  {kind} {node}")

    groups = collections.OrderedDict()
    for what, shape, t in prims:
        groups.setdefault((what, shape), []).append(t)
    print(f"program: {len(prims)} oneDNN primitives a run, least times summed "
          f"{sum(t for _, _, t in prims):.2f} ms; {faults:.0f} minor page "
          f"faults and {system:.2f} ms system time a run")
    for (what, shape), ts in sorted(groups.items(), key=lambda x: -sum(x[1])):
        print(f"  {sum(ts):8.3f} ms  {len(ts):2d} x {ts[0]:.3f}  {what}  {shape}")


if __name__ == "__main__":
    main()
