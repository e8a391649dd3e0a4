#!/usr/bin/env python3
"""Measured against predicted: multi-rank training plans on this machine.

One command (no numpy needed):

    python3 bench/dist/run_bench.py --build build [--steps 20] [--rounds 3]
        [--plans "dp=2,mbs=32,grad_overlap=0;dp=2,mbs=32;pp=2,mbs=16,schedule=1f1b;tp=2,mbs=64"]

1. The model: `dist-modelgen mlp` (--layers, --hidden; input = hidden,
   16 classes), trained with softmax cross-entropy and SGD, global batch
   --batch.
2. `dist-profile` measures op times at every micro-batch size the plans and
   the one-rank baseline use (as many copies at once as ranks, one thread
   each), the ops' shards at every tp the plans use (`--tp`: the tp job
   itself, each rank timing its shards) and the links between 2 ranks:
   prof/profile.json, prof/cluster.yaml.
3. Every plan goes through the product path: `dist-compile MODEL
   --input-shape=input:MBSxH --dist-plan=PLAN --dist-batch=B --train=... -o
   job/` and `dist-run job/ input=... labels=... --steps N --time` (one
   thread per rank); the one-rank baseline is the same model compiled for the
   whole batch, run with --threads 1. Measured: the program's own `--time`
   mean over the steps after the first; each round runs every row once
   (interleaved), the table gives the median over the rounds.
4. Predicted: `dist-opt MODEL --input-shape=input:MBSxH
   --dist-cluster=prof/cluster.yaml --dist-profile=prof/profile.json
   --dist-dtype=f32 --dist-plan=PLAN --dist-batch=B --dist-report=...`,
   the report's iteration_time_s.

Plans are separated by ";".
The machine has 2 cores shared with other work: figures are noisy, ratios
within one run are what to read.
"""
import argparse
import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = "loss=softmax-cross-entropy:labels optimizer=sgd lr=0.01"


def sh(cmd, env=None, capture=True):
    r = subprocess.run(cmd, env=env, capture_output=capture, text=True)
    if r.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (r.returncode, " ".join(cmd),
                                             r.stdout or "", r.stderr or ""))
    return r.stdout


def write_npy(path, descr, shape, values):
    """A C-order little-endian .npy; values cycle through `values`."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    n = 1
    for d in shape:
        n *= d
    code = {"<f4": "f", "<i8": "q"}[descr]
    data = struct.pack("<%d%s" % (n, code), *[values[i % len(values)] for i in range(n)])
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)


def plan_value(plan, key, default):
    m = re.search(r"(?:^|,)%s=([^,]+)" % key, plan)
    return m.group(1) if m else default


def devices(plan):
    n = 1
    for k in ("dp", "tp", "pp"):
        n *= int(plan_value(plan, k, "1"))
    return n


TIME = re.compile(r"time: (\d+) step\(s\) .* mean ([0-9.]+) ms, min ([0-9.]+) ms")


def measure(cmd, env):
    out = sh(cmd, env=env)
    m = TIME.search(out)
    if not m:
        sys.exit("no time line in the output of %s:\n%s" % (" ".join(cmd), out))
    return float(m.group(2)), float(m.group(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--plans", default="dp=2,mbs=32,grad_overlap=0;dp=2,mbs=32;"
                    "pp=2,mbs=16,schedule=1f1b;tp=2,mbs=64")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    tool = lambda name: os.path.join(bin_dir, name)
    work = args.work or tempfile.mkdtemp(prefix="dist-bench-")
    os.makedirs(work, exist_ok=True)
    B, H = args.batch, args.hidden
    plans = [p.strip() for p in args.plans.split(";") if p.strip()]

    model = os.path.join(work, "mlp.onnx")
    sh([tool("dist-modelgen"), "mlp", "--layers", str(args.layers), "--hidden", str(H),
        "--input", str(H), "--classes", "16", "-o", model])
    x, labels = os.path.join(work, "x.npy"), os.path.join(work, "labels.npy")
    write_npy(x, "<f4", [B, H], [0.5 * math.sin(0.37 * i) for i in range(997)])
    write_npy(labels, "<i8", [B], [i % 16 for i in range(B)])

    print("load average (1, 5, 15 min) at the start: %.1f %.1f %.1f on %d cores"
          % (os.getloadavg() + (os.cpu_count(),)), file=sys.stderr)
    # 1. Profile at every micro-batch size in use.
    sizes = sorted({B} | {int(plan_value(p, "mbs", "1")) for p in plans})
    tps = sorted({int(plan_value(p, "tp", "1")) for p in plans} - {1})
    prof = os.path.join(work, "prof")
    print(sh([tool("dist-profile"), model, "--input-shape=input:%dx%d" % (B, H),
              "--train=" + TRAIN, "--micro-batches=" + ",".join(map(str, sizes)),
              "--ranks=2", "--threads-per-rank=1", "--steps=8", "-o", prof]
             + (["--tp=" + ",".join(map(str, tps))] if tps else [])), end="")

    # 2. Jobs.
    rows = [("1 rank", "dp=1,mbs=%d" % B)] + [(p, p) for p in plans]
    jobs = {}
    for name, plan in rows:
        mbs = int(plan_value(plan, "mbs", "1"))
        job = os.path.join(work, "job%d" % len(jobs)) + "/"
        cmd = [tool("dist-compile"), model, "--input-shape=input:%dx%d" % (mbs, H),
               "--train=" + TRAIN, "-o", job]
        if name != "1 rank":
            cmd += ["--dist-plan=" + plan, "--dist-batch=%d" % B]
        sh(cmd)
        report = os.path.join(work, "report%d.json" % len(jobs))
        sh([tool("dist-opt"), model, "--dist-weights=ignore",
            "--input-shape=input:%dx%d" % (mbs, H), "--dist-cluster=" + prof + "/cluster.yaml",
            "--dist-profile=" + prof + "/profile.json", "--dist-dtype=f32",
            "--dist-plan=" + plan, "--dist-batch=%d" % B, "--dist-report=" + report])
        with open(report) as f:
            predicted = json.load(f)["estimate"]["iteration_time_s"] * 1e3
        jobs[name] = dict(plan=plan, job=job, predicted=predicted, means=[], mins=[])

    # 3. Measure, interleaved.
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for r in range(args.rounds):
        for name, j in jobs.items():
            cmd = [tool("dist-run"), j["job"], "input=" + x, "labels=" + labels,
                   "--steps", str(args.steps), "--time", "--threads", "1",
                   "-o", os.path.join(work, "out")]
            mean, low = measure(cmd, env)
            j["means"].append(mean)
            j["mins"].append(low)
            print("round %d: %-40s mean %.2f ms, min %.2f ms" % (r + 1, name, mean, low),
                  file=sys.stderr)

    print("load average (1, 5, 15 min) at the end: %.1f %.1f %.1f on %d cores"
          % (os.getloadavg() + (os.cpu_count(),)), file=sys.stderr)
    one = jobs["1 rank"]
    t1 = statistics.median(one["means"])
    p1 = one["predicted"]
    print("\nMLP %d x %d, batch %d, SGD, %d steps x %d rounds; %s"
          % (args.layers, H, B, args.steps, args.rounds, open(prof + "/cluster.yaml").read()
             .split("description:")[1].split("\n")[0].strip() if os.path.exists(prof + "/cluster.yaml") else ""))
    print("| plan | ranks | measured ms/iter (median of rounds) | min ms | predicted ms/iter | error | measured speed-up | predicted speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, j in jobs.items():
        t = statistics.median(j["means"])
        print("| %s | %d | %.2f | %.2f | %.2f | %+.1f%% | %.2f | %.2f |" % (
            name if name == "1 rank" else "`%s`" % j["plan"], devices(j["plan"]), t,
            min(j["mins"]), j["predicted"], 100 * (j["predicted"] - t) / t, t1 / t,
            p1 / j["predicted"]))


if __name__ == "__main__":
    main()
