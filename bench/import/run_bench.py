#!/usr/bin/env python3
"""Import benchmark: dist-opt's ONNX import time and peak memory.

Models (made in WORK, default bench/import/work/, not committed):
  gpt2-124m.onnx         GPT-2 124M, random weights inline (~650 MB file)
  gpt2-124m-ext.onnx     the same, weights in gpt2-124m-ext.weights
  gpt-96x12288.onnx      graph-only GPT, 96 layers, hidden 12288, 96 heads,
                         seq 2048, vocab 51200 (dist-modelgen; 650 GB of
                         weights referenced, none present)
  mlp.onnx               test/fixtures/small/mlp.onnx (process baseline)

Each is imported REPEAT times with `/usr/bin/time -v dist-opt FILE -o OUT`;
the table gives the median wall time, the largest peak RSS, that RSS minus
the file size (model file plus external weights file where present: what
the importer would need if it read every byte into memory), the RSS above
the MLP's (the process itself: libMLIR, dialects), and the size of the
printed IR. Prints a markdown table (also written to WORK/results.md).

  python3 bench/import/run_bench.py [--dist-opt BIN] [--dist-modelgen BIN]
      [--python .venv-fixtures/bin/python] [--repeat 3] [--work DIR]
"""

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def find_tool(name, explicit):
    if explicit:
        return explicit
    found = sorted(glob.glob(os.path.join(SRC, "build*", "bin", name)),
                   key=lambda p: -os.path.getmtime(p))
    found.append(shutil.which(name) or "")
    for f in found:
        if f and os.access(f, os.X_OK):
            return f
    sys.exit("run_bench.py: error: %s not found; build it or pass --%s"
             % (name, name))


def prepare(args, dist_modelgen):
    work = args.work
    os.makedirs(work, exist_ok=True)
    gpt2 = os.path.join(work, "gpt2-124m.onnx")
    if not (os.path.exists(gpt2) and
            os.path.exists(os.path.join(work, "gpt2-124m-ext.weights"))):
        print("building GPT-2 124M with %s (a few minutes)" % args.python,
              file=sys.stderr)
        subprocess.run([args.python, os.path.join(HERE, "make_gpt2_124m.py"),
                        work], check=True)
    big = os.path.join(work, "gpt-96x12288.onnx")
    subprocess.run([dist_modelgen, "gpt", "--layers", "96", "--hidden",
                    "12288", "--heads", "96", "--seq", "2048", "--vocab",
                    "51200", "-o", big], check=True, stdout=sys.stderr)
    return [
        ("GPT-2 124M, weights inline", gpt2, [], None),
        ("GPT-2 124M, external weights",
         os.path.join(work, "gpt2-124m-ext.onnx"), [],
         os.path.join(work, "gpt2-124m-ext.weights")),
        ("GPT 96 layers / 12288 hidden (175B), graph-only", big,
         ["--dist-weights=ignore"], None),
        ("MLP fixture (process baseline)",
         os.path.join(SRC, "test", "fixtures", "small", "mlp.onnx"), [],
         None),
    ]


def measure(dist_opt, path, flags, out):
    cmd = ["/usr/bin/time", "-v", dist_opt, path] + flags + ["-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("run_bench.py: error: `%s` failed (exit %d):\n%s"
                 % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):"
                     r"([\d.]+)", p.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    h, m, s = wall.groups()
    seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    return seconds, int(rss.group(1)) * 1024


def mib(n):
    if abs(n) < 2**20:
        return "%.1f KiB" % (n / 2**10)
    if abs(n) < 2**30:
        return "%.1f MiB" % (n / 2**20)
    return "%.2f GiB" % (n / 2**30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dist-opt")
    parser.add_argument("--dist-modelgen")
    parser.add_argument("--python", default=os.path.join(
        SRC, ".venv-fixtures", "bin", "python"),
        help="python with torch + transformers for make_gpt2_124m.py")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(HERE, "work"))
    args = parser.parse_args()
    dist_opt = find_tool("dist-opt", args.dist_opt)
    dist_modelgen = find_tool("dist-modelgen", args.dist_modelgen)
    models = prepare(args, dist_modelgen)
    rows = []
    baseline = None
    # The MLP (last) first: its peak RSS is what the process costs anyway.
    for label, path, flags, weights in models[-1:] + models[:-1]:
        size = os.path.getsize(path)
        total = size + (os.path.getsize(weights) if weights else 0)
        out = os.path.join(args.work, os.path.basename(path) + ".mlir")
        runs = [measure(dist_opt, path, flags, out)
                for _ in range(args.repeat)]
        wall = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        baseline = rss if baseline is None else baseline
        rows.append("| %s | %s | %.2f s | %s | %s | %s | %s |" % (
            label, mib(total), wall, mib(rss), mib(rss - total),
            mib(rss - baseline), mib(os.path.getsize(out))))
        print(rows[-1], file=sys.stderr)
    head = ("| model | file (+ weights) | import wall (median of %d) | "
            "peak RSS | RSS - file | RSS - baseline | printed IR |\n"
            "| --- | --- | --- | --- | --- | --- | --- |" % args.repeat)
    machine = "%d cores, %s" % (os.cpu_count(), subprocess.run(
        ["uname", "-m"], capture_output=True, text=True).stdout.strip())
    table = "%s\n%s\n\n(dist-opt %s; %s)\n" % (head, "\n".join(rows),
                                               dist_opt, machine)
    with open(os.path.join(args.work, "results.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
