#!/usr/bin/env python3
"""Kernel by kernel: the GPT training step against onnxruntime-training.

The training benchmark's model and settings (bench_train.py: GPT, 12
layers, hidden 768, batch 4 x 128, AdamW), one thread, --steps + 1 steps on
each side, the first left out:

1. DistOpt's program with DNNL_VERBOSE=1 and --profile: per oneDNN
   primitive of a step, the least of its times over the steps (what it
   takes when nothing preempts it, as op_times.py takes them for inference
   programs), summed by primitive and shape; and the program's own report,
   whose CPU times per op kind cover the kernels that are not oneDNN's
   (generated loops, the optimizer update, the runtime's own kernels);
2. onnxruntime-training with its profiler on (every session: the training
   graph and the optimizer), per node the least of its kernel times over
   the steps, summed by op type;
3. each side's CPU time (user + system) per step: the median of the steps
   after the first.

The load average is printed with each measurement.

    .venv/bin/python bench/codegen/train_op_times.py --build build [--steps 5]
        [--top 15]
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys

import bench_train


def program_kernels(exe, ids, labels, steps, work):
    """(least ms per primitive as (what, shape, ms)), profile report, losses."""
    env = dict(os.environ, OMP_NUM_THREADS="1", DNNL_VERBOSE="1")
    p = subprocess.run([exe, f"input_ids={ids}", f"labels={labels}", "-o", work,
                        "--steps", str(steps + 1), "--profile"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{exe} failed:\n{p.stderr[-3000:]}")
    lines = [l.split(",") for l in p.stdout.splitlines()
             if l.startswith("onednn_verbose,exec")]
    per = len(lines) // (steps + 1)
    if per * (steps + 1) != len(lines):
        sys.exit(f"{len(lines)} oneDNN executions in {steps + 1} steps: "
                 "the steps do not run the same primitives")
    out = []
    for i in range(per):
        f = lines[per + i]
        # primitive, impl, layouts, post-ops: the columns of oneDNN 2.x
        what = " ".join(x for x in (f[3], f[4], f[7].strip()) if x)
        out.append((what, f[-2], min(float(lines[s * per + i][-1])
                                     for s in range(1, steps + 1))))
    losses = [l.split()[-1] for l in p.stdout.splitlines() if l.startswith("step")]
    return out, p.stderr, losses


def ort_events(prefix):
    """Node kernel events of every profile the sessions wrote. Sessions
    that start in the same second write one file name; each event is a line
    of its own, so the lines are read one by one."""
    events = []
    for path in glob.glob(prefix + "*.json"):
        with open(path) as f:
            for line in f:
                line = line.strip().rstrip(",")
                if '"cat" : "Node"' not in line or "_kernel_time" not in line:
                    continue
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return events


def ort_kernels(events, steps):
    """Least ms per node over the steps after the first: {node: (op, ms)}."""
    times, kind = collections.defaultdict(list), {}
    for e in sorted(events, key=lambda e: e["ts"]):
        node = e["name"][:-len("_kernel_time")]
        times[node].append(e["dur"] / 1e3)
        kind[node] = e["args"].get("op_name", "?")
    out = {}
    for node, t in times.items():
        later = t[1:] if len(t) == steps + 1 else t
        out[node] = (kind[node], min(later))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_train.add_common_args(ap)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    if args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    path, work, ids, labels, exe, dist_params, ort_script = bench_train.prepare(args)

    load = [os.getloadavg()[0]]
    prims, report, dist_losses = program_kernels(exe, ids, labels, args.steps, work)
    load.append(os.getloadavg()[0])
    prefix = os.path.join(work, "ortprof")
    p = bench_train.run_ort(args, ort_script, path, work, 1, args.steps, ids, labels,
                            env=dict(os.environ, ORT_PROFILE_PREFIX=prefix))
    load.append(os.getloadavg()[0])
    if p.returncode != 0:
        sys.exit(f"onnxruntime-training failed:\n{p.stderr[-3000:]}")
    ort_line = bench_train.ort_result(p, dist_params)
    nodes = ort_kernels(ort_events(prefix), args.steps)

    dist_cpu = [l for l in report.splitlines() if l.startswith("profile CPU time")][0]
    dist_step = float(dist_cpu.split("median of the others")[1].split("ms")[0])
    print(f"Load average (1 minute): {min(load):.1f}-{max(load):.1f}; 1 thread; "
          f"{args.steps + 1} steps each, the first left out")
    print(f"Losses: DistOpt {', '.join(dist_losses)}; onnxruntime-training "
          f"{', '.join(ort_line[3:])}")
    print(f"CPU time per step (median): DistOpt {dist_step:.0f} ms, "
          f"onnxruntime-training {float(ort_line[2]) * 1e3:.0f} ms")

    by_kind = collections.defaultdict(lambda: [0.0, 0])
    for kind, t in nodes.values():
        by_kind[kind][0] += t
        by_kind[kind][1] += 1
    print(f"\nonnxruntime-training: {len(nodes)} nodes a step, least times summed "
          f"{sum(v[0] for v in by_kind.values()):.1f} ms")
    for kind, (t, n) in sorted(by_kind.items(), key=lambda x: -x[1][0])[:args.top]:
        print(f"  {t:9.1f} ms  {n:4d}  {kind}")

    groups = collections.OrderedDict()
    for what, shape, t in prims:
        groups.setdefault((what, shape), []).append(t)
    print(f"\nDistOpt: {len(prims)} oneDNN primitives a step, least times summed "
          f"{sum(t for _, _, t in prims):.1f} ms")
    for (what, shape), ts in sorted(groups.items(),
                                    key=lambda x: -sum(x[1]))[:args.top]:
        print(f"  {sum(ts):9.1f} ms  {len(ts):3d} x {min(ts):7.2f}  {shape}  {what}")
    print("\nDistOpt's --profile (CPU time per op kind, the steps after the first):")
    table = report[report.index("op kind"):].splitlines()
    # The per-op table's header is the first indented line ("   op  wall").
    end = next(i for i, l in enumerate(table) if l.startswith(" "))
    print("\n".join(table[:min(end, args.top + 1)]))


if __name__ == "__main__":
    main()
