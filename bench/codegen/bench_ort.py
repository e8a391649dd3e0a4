#!/usr/bin/env python3
"""dist-compile programs against onnxruntime on ten real architectures.

For each model of bench/codegen/make_models.py (GPT-2, LLaMA, Mistral,
BERT, ViT, Whisper encoder, ResNet-18, ConvNeXt, EfficientNet-B0,
MobileNetV3-small; random weights, batch 2) this script

1. compiles it with dist-compile (default flags) and checks its outputs
   against onnxruntime's on the same inputs (max abs difference);
2. times both, interleaved: for each round, for each model, for each
   thread count, onnxruntime (CPU execution provider, default optimization
   level ORT_ENABLE_ALL, intra-op threads = T, inter-op 1) runs --runs
   times in this process, then the program runs --runs + 1 times in one
   process with OMP_NUM_THREADS=T and reports the median of its runs after
   the first (`--profile`: process start, weight loading and kernel
   creation excluded, as onnxruntime's session creation is); the figure
   per cell is the median over rounds of those medians;
3. measures peak RSS (ru_maxrss) of the program and of a Python process
   that creates the onnxruntime session and runs it, at 1 thread; the RSS
   of a Python process that only imports numpy and onnxruntime is given
   too, since it is part of the onnxruntime figure.

Prints one markdown table (the rows of docs/benchmarks.md).

    .venv/bin/python bench/codegen/bench_ort.py --build build [--threads 1 2]
        [--rounds 5] [--runs 20] [--only gpt2 bert ...]

With --cpu-time, step 2 measures CPU time instead of wall-clock time, for
machines shared with other work (a preempted process accumulates none):
for each round, model and thread count, onnxruntime in a Python child
process and the program each run once and --runs + 1 times, and the figure
is (CPU time of the long run - CPU time of the short one) / --runs, user +
system time of the child (os.wait4), so process start, weight loading and
session / primitive creation drop out; medians over rounds. Spinning worker
threads would count as CPU time, so onnxruntime's intra-op threads do not
spin and the program runs with OMP_WAIT_POLICY=PASSIVE. --baseline-build
OTHER adds the programs compiled by OTHER's dist-compile (another checkout
of the repository), measured in the same rounds: a before/after A/B.

    .venv/bin/python bench/codegen/bench_ort.py --build build --cpu-time \
        --threads 1 [--baseline-build ../main/build] [--only resnet18 ...]

onnxruntime comes from the test venv (requirements-test.txt); missing
models are exported first with the fixtures venv (.venv-fixtures, see
docs/fixtures.md).
"""
import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

from bench_inputs import make_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ["gpt2", "llama", "mistral", "bert", "vit", "whisper_enc", "resnet18",
          "convnext", "efficientnet_b0", "mobilenet_v3s"]

ORT_CHILD = r"""
import sys, numpy as np, onnxruntime as ort
path, t, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
feeds = {a.split('=', 1)[0]: np.load(a.split('=', 1)[1]) for a in sys.argv[4:]}
so = ort.SessionOptions(); so.intra_op_num_threads = t; so.inter_op_num_threads = 1
so.add_session_config_entry("session.intra_op.allow_spinning", "0")
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
for _ in range(runs):
    s.run(None, feeds)
"""


# Forks and execs the command from a small Python process: ru_maxrss
# counts a forked child's pages from before its exec, so a child of this
# (large) benchmark process would report this process's RSS.
RSS_LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
sys.exit(1 if status else 0)
"""


def run_usage(cmd, env=None):
    """Runs cmd (output discarded); returns its peak RSS in MB and its CPU
    time (user + system) in seconds."""
    p = subprocess.run(["/usr/bin/python3", "-S", "-c", RSS_LAUNCHER] + cmd,
                       capture_output=True, text=True, env=env or os.environ)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    rss, cpu = p.stdout.split()[-2:]
    return int(rss) / 1024.0, float(cpu)


def run_rss(cmd, env=None):
    """Runs cmd (output discarded); returns its peak RSS in MB."""
    return run_usage(cmd, env)[0]


def cpu_per_run(cmd, repeat_args, threads, runs, env_extra):
    """CPU ms of one run of cmd: (CPU time of runs + 1 runs - CPU time of
    one run) / runs. repeat_args(n) gives the arguments that make n runs."""
    env = dict(os.environ, **env_extra)
    one = run_usage(cmd + repeat_args(1), env)[1]
    many = run_usage(cmd + repeat_args(runs + 1), env)[1]
    return (many - one) / runs * 1e3


def program_median(exe, args, threads, runs, work):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([exe] + args + ["-o", work, "--repeat", str(runs + 1),
                                       "--profile"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{exe} failed:\n{p.stderr[-3000:]}")
    for line in p.stderr.splitlines():
        if line.startswith("profile:") and "median of the others" in line:
            return float(line.split("median of the others")[1].split("ms")[0])
    sys.exit(f"{exe}: no profile line in\n{p.stderr[-2000:]}")


def ort_median(sess, feeds, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def compile_checked(dc, path, exe, inputs, mwork, outputs, want, m):
    """Compiles `path` into `exe` with dist-compile `dc`, runs it once on
    `inputs`; returns (compile seconds, max abs difference from `want`)."""
    t0 = time.perf_counter()
    p = subprocess.run([dc, path, "-o", exe], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{dc} {m} failed:\n{p.stderr[-3000:]}")
    compile_s = time.perf_counter() - t0
    subprocess.run([exe] + inputs + ["-o", mwork], check=True)
    diff = max(float(np.abs(np.load(os.path.join(mwork, o + ".npy")) - w).max())
               for o, w in zip(outputs, want))
    return compile_s, diff


def cpu_time_table(args, names, setup, child):
    """The --cpu-time measurement and its markdown table."""
    base = args.baseline_build is not None
    for s in setup.values():
        s["base"] = {t: [] for t in args.threads}
        s["load"] = []
    for r in range(args.rounds):
        for m in names:
            s = setup[m]
            for t in args.threads:
                s["ort"][t].append(cpu_per_run(
                    [sys.executable, child, s["path"], str(t)],
                    lambda n: [str(n)] + s["inputs"], t, args.runs, {}))
                omp = {"OMP_NUM_THREADS": str(t), "OMP_WAIT_POLICY": "PASSIVE"}
                for key, exe in [("dist", s["exe"])] + (
                        [("base", s["base_exe"])] if base else []):
                    s[key][t].append(cpu_per_run(
                        [exe] + s["inputs"] + ["-o", s["work"]],
                        lambda n: ["--repeat", str(n)], t, args.runs, omp))
            s["load"].append(os.getloadavg()[0])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    head = "| model | max abs diff |"
    rule = "| --- | ---: |"
    for t in args.threads:
        head += f" onnxruntime {t}T ms CPU/run |"
        rule += " ---: |"
        if base:
            head += f" baseline {t}T ms | ratio baseline {t}T |"
            rule += " ---: | ---: |"
        head += f" DistOpt {t}T ms | ratio {t}T |"
        rule += " ---: | ---: |"
    print(head + " load |")
    print(rule + " ---: |")
    for m in names:
        s = setup[m]
        row = f"| {m} | {s['diff']:.1e} |"
        for t in args.threads:
            o = statistics.median(s["ort"][t])
            row += f" {o:.2f} |"
            if base:
                b = statistics.median(s["base"][t])
                row += f" {b:.2f} | {b / o:.2f} |"
            d = statistics.median(s["dist"][t])
            row += f" {d:.2f} | {d / o:.2f} |"
        loads = s["load"]
        row += f" {min(loads):.1f}-{max(loads):.1f} |"
        print(row, flush=True)
    print("\n(CPU time per run: median over rounds of (CPU time of "
          f"{args.runs + 1} runs - CPU time of 1 run) / {args.runs}; load: "
          "the 1-minute load average after each round.)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=None,
                    help="folder of the exported models (default BUILD/bench-models)")
    ap.add_argument("--fixtures-python",
                    default=os.path.join(ROOT, ".venv-fixtures", "bin", "python"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", nargs="*", choices=MODELS)
    ap.add_argument("--cpu-time", action="store_true",
                    help="measure CPU time per run instead of wall-clock "
                    "medians (for shared machines; no RSS columns)")
    ap.add_argument("--baseline-build", default=None,
                    help="with --cpu-time: also measure the programs of this "
                    "build's dist-compile (before/after A/B)")
    args = ap.parse_args()
    dc = os.path.join(args.build, "bin", "dist-compile")
    base_dc = None
    if args.baseline_build is not None:
        if not args.cpu_time:
            ap.error("--baseline-build needs --cpu-time")
        base_dc = os.path.join(args.baseline_build, "bin", "dist-compile")
    for exe in [dc] + ([base_dc] if base_dc else []):
        if not os.access(exe, os.X_OK):
            ap.error(f"no dist-compile at '{exe}': build it first "
                     "(scripts/build.sh BUILD all) or pass its --build")
    models_dir = args.models or os.path.join(args.build, "bench-models")
    names = args.only or MODELS
    missing = [m for m in names
               if not os.path.exists(os.path.join(models_dir, m + ".onnx"))]
    if missing:
        print(f"exporting {' '.join(missing)} with {args.fixtures_python}",
              file=sys.stderr)
        subprocess.run([args.fixtures_python,
                        os.path.join(ROOT, "bench", "codegen", "make_models.py"),
                        "--out", models_dir, "--only"] + missing, check=True)
    work = tempfile.mkdtemp(prefix="dist-bench-ort-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # however it ends
    child = os.path.join(work, "ort_child.py")
    with open(child, "w") as f:
        f.write(ORT_CHILD)
    setup = {}
    for m in names:
        path = os.path.join(models_dir, m + ".onnx")
        mwork = os.path.join(work, m)
        os.makedirs(mwork)
        feeds, inputs, outputs = make_inputs(path, mwork)
        exe = os.path.join(mwork, m + ".bin")
        sessions = {}
        for t in args.threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            so.inter_op_num_threads = 1
            sessions[t] = ort.InferenceSession(path, so,
                                               providers=["CPUExecutionProvider"])
        want = sessions[args.threads[0]].run(None, feeds)
        compile_s, diff = compile_checked(dc, path, exe, inputs, mwork, outputs,
                                          want, m)
        setup[m] = dict(path=path, feeds=feeds, inputs=inputs, exe=exe,
                        sessions=sessions, diff=diff, compile=compile_s,
                        work=mwork, ort={t: [] for t in args.threads},
                        dist={t: [] for t in args.threads})
        print(f"{m}: compiled in {compile_s:.1f} s, max abs diff {diff:.2e}",
              file=sys.stderr)
        if base_dc:
            base_exe = os.path.join(mwork, m + ".baseline.bin")
            _, base_diff = compile_checked(base_dc, path, base_exe, inputs,
                                           mwork, outputs, want, m)
            setup[m]["base_exe"] = base_exe
            print(f"{m}: baseline max abs diff {base_diff:.2e}", file=sys.stderr)
    if args.cpu_time:
        cpu_time_table(args, names, setup, child)
        return
    for r in range(args.rounds):
        for m in names:
            s = setup[m]
            for t in args.threads:
                s["ort"][t].append(ort_median(s["sessions"][t], s["feeds"], args.runs))
                s["dist"][t].append(program_median(s["exe"], s["inputs"], t,
                                                   args.runs, s["work"]))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    # Peak memory at one thread: the program and a Python onnxruntime process.
    base = run_rss([sys.executable, "-c", "import numpy, onnxruntime"])
    head = "| model | max abs diff |"
    rule = "| --- | ---: |"
    for t in args.threads:
        head += f" onnxruntime {t}T ms | DistOpt {t}T ms | ratio {t}T |"
        rule += " ---: | ---: | ---: |"
    head += " peak RSS onnxruntime MB | peak RSS DistOpt MB | RSS ratio |"
    rule += " ---: | ---: | ---: |"
    print(head)
    print(rule)
    for m in names:
        s = setup[m]
        row = f"| {m} | {s['diff']:.1e} |"
        for t in args.threads:
            o = statistics.median(s["ort"][t])
            d = statistics.median(s["dist"][t])
            row += f" {o:.2f} | {d:.2f} | {d / o:.2f} |"
        env = dict(os.environ, OMP_NUM_THREADS="1")
        rss_d = run_rss([s["exe"]] + s["inputs"] + ["-o", s["work"], "--repeat",
                                                    str(args.runs)], env)
        rss_o = run_rss([sys.executable, child, s["path"], "1", str(args.runs)]
                        + s["inputs"])
        row += f" {rss_o:.0f} | {rss_d:.0f} | {rss_d / rss_o:.2f} |"
        print(row, flush=True)
    print(f"\n(Python + numpy + onnxruntime imported, no session: {base:.0f} MB "
          "of the onnxruntime RSS.)")


if __name__ == "__main__":
    main()
