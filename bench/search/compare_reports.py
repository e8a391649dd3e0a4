#!/usr/bin/env python3
"""Runs the same CLI searches with two builds of dist-opt, alternated, and
checks that they write the same JSON report.

Each case writes its model with the base build's dist-modelgen, then runs
`dist-opt ... --dist-report=...` with each build in turn, `--rounds` times.
The reports must be equal but for the search's own clocks (`search.time_s`,
`search.cpu_time_s`); the first difference is printed and the script exits
1. It prints, per case and build, the CPU time of every run (user + sys of
the whole dist-opt process, import included: what /usr/bin/time reports)
and the search's own CPU time (the report's search.cpu_time_s: the
search alone, without import and layer analysis), and the load average
when the case started, as a Markdown table.

    bench/search/compare_reports.py --base /work/main/build --build build
    bench/search/compare_reports.py --base A --build B -k gpt175 --rounds 3
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIERS = os.path.join(ROOT, "test", "driver", "Inputs", "tiers.yaml")

GPT175 = ["gpt", "--layers", "96", "--hidden", "12288", "--heads", "96",
          "--seq", "2048", "--vocab", "51200"]
GPT1T = ["gpt", "--layers", "128", "--hidden", "25600", "--heads", "160",
         "--seq", "2048", "--vocab", "51200"]
DEEPSEEK = ["llama", "--layers", "61", "--hidden", "7168", "--heads", "128",
            "--ffn-hidden", "18432", "--seq", "4096", "--vocab", "129280",
            "--experts", "256", "--top-k", "8", "--expert-ffn", "2048",
            "--shared-experts", "1", "--dense-layers", "3",
            "--q-lora-rank", "1536", "--kv-lora-rank", "512",
            "--qk-nope-head-dim", "128", "--qk-rope-head-dim", "64",
            "--v-head-dim", "128"]
SMALL_MOE = ["llama", "--layers", "4", "--hidden", "1024", "--heads", "8",
             "--kv-heads", "4", "--ffn-hidden", "2816", "--seq", "1024",
             "--vocab", "32000", "--experts", "16", "--top-k", "2",
             "--expert-ffn", "512", "--shared-experts", "1",
             "--dense-layers", "1"]

# name: (model, dist-opt arguments after the model and --dist-weights=ignore)
CASES = {
    "gpt175": (GPT175, ["--dist-cluster=dgx-a100-80gb:128", "--dist-search",
                        "--dist-batch=1536"]),
    "gpt1t": (GPT1T, ["--dist-cluster=dgx-a100-80gb:384", "--dist-search",
                      "--dist-batch=3072"]),
    "deepseek-v3": (DEEPSEEK, ["--dist-cluster=dgx-h100:256", "--dist-search",
                               "--dist-batch=15360"]),
    "offload": (["gpt", "--layers", "24", "--hidden", "3072", "--heads", "24",
                 "--seq", "1024", "--vocab", "51200"],
                ["--input-shape=input_ids:1x1024", "--dist-cluster=" + TIERS,
                 "--dist-search", "--dist-batch=8"]),
    "mixed": (["gpt", "--layers", "8", "--hidden", "512", "--heads", "8",
               "--seq", "256", "--vocab", "1000"],
              ["--dist-cluster=mixed-a100-v100:2", "--dist-dtype=f16",
               "--dist-search", "--dist-batch=64"]),
    "async": (["gpt", "--layers", "8", "--hidden", "256", "--heads", "4",
               "--seq", "128", "--vocab", "1000"],
              ["--dist-cluster=dgx-a100-80gb:1", "--dist-search",
               "--dist-allow-async", "--dist-batch=16"]),
    "moe-ep-runs-memory": (SMALL_MOE, ["--dist-cluster=dgx-h100:2",
                                       "--dist-search=ep-runs=1",
                                       "--dist-memory-limit=20GB",
                                       "--dist-batch=64"]),
    "inference": (GPT175, ["--dist-cluster=dgx-a100-80gb:16", "--dist-search",
                           "--dist-mode=infer", "--dist-batch=64"]),
}

CLOCKS = ("time_s", "cpu_time_s")


def cpu_seconds(cmd, log):
    """Runs cmd; returns user + sys CPU seconds of the process."""
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}); see {log.name}")
    return usage.ru_utime + usage.ru_stime


def without_clocks(report):
    search = report.get("search")
    if isinstance(search, dict):
        for key in CLOCKS:
            search.pop(key, None)
    return report


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return f"{path}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'the base' if key in a else 'the build'}"
            d = first_difference(a[key], b[key], f"{path}.{key}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="build folder of the reference")
    ap.add_argument("--build", required=True, help="build folder compared with it")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-k", action="append", default=[],
                    help="run only the cases whose name contains this (repeatable)")
    ap.add_argument("--work", help="folder for models and reports (default: a temporary one)")
    args = ap.parse_args()
    cases = {n: c for n, c in CASES.items()
             if not args.k or any(k in n for k in args.k)}
    if not cases:
        sys.exit(f"no case matches {args.k}; the cases are {', '.join(CASES)}")
    builds = {"base": os.path.abspath(args.base), "build": os.path.abspath(args.build)}
    for name, folder in builds.items():
        if not os.access(os.path.join(folder, "bin", "dist-opt"), os.X_OK):
            sys.exit(f"--{name} {folder}: no bin/dist-opt there; build it first")
    work = args.work or tempfile.mkdtemp(prefix="compare-reports-")
    os.makedirs(work, exist_ok=True)
    modelgen = os.path.join(builds["base"], "bin", "dist-modelgen")
    failed = False
    print("| case | load (1 min) | base CPU s | build CPU s | "
          "base search CPU s | build search CPU s | report |")
    print("|---|---|---|---|---|---|---|")
    for name, (model, flags) in cases.items():
        onnx = os.path.join(work, name + ".onnx")
        subprocess.run([modelgen, *model, "-o", onnx], check=True,
                       stdout=subprocess.DEVNULL)
        load = os.getloadavg()[0]
        times = {b: [] for b in builds}
        searchTimes = {b: [] for b in builds}
        reports = {}
        for r in range(args.rounds):
            for b, folder in builds.items():
                report = os.path.join(work, f"{name}.{b}.json")
                cmd = [os.path.join(folder, "bin", "dist-opt"), onnx,
                       "--dist-weights=ignore", *flags, "--dist-progress=never",
                       f"--dist-report={report}", "-o", os.devnull]
                with open(os.path.join(work, f"{name}.{b}.log"), "w") as log:
                    times[b].append(cpu_seconds(cmd, log))
                with open(report) as f:
                    data = json.load(f)
                searchTimes[b].append(data.get("search", {}).get("cpu_time_s", 0))
                reports[b] = without_clocks(data)
        diff = first_difference(reports["base"], reports["build"])
        failed |= diff is not None
        load = f"{load:.1f}-{os.getloadavg()[0]:.1f}"
        cols = [", ".join(f"{t:.2f}" for t in times[b]) for b in builds]
        cols += [", ".join(f"{t:.2f}" for t in searchTimes[b]) for b in builds]
        print(f"| {name} | {load} | {cols[0]} | {cols[1]} | {cols[2]} | {cols[3]} | "
              f"{'equal' if diff is None else 'DIFFERS: ' + diff} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
