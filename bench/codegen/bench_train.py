#!/usr/bin/env python3
"""The GPT training step: DistOpt against onnxruntime-training and oneDNN.

The model (bench/codegen/make_models.py --only gpt_train): GPT-2
architecture, 12 layers, hidden 768, 12 heads, sequence 128, vocabulary
8192, untied head (97.7M parameters), batch 4, logits flattened to
[512, 8192]; cross-entropy loss, AdamW (lr 1e-4, betas 0.9/0.999, eps 1e-8,
weight decay 0.01), the same ONNX file for both.

- DistOpt: `dist-compile --train="loss=softmax-cross-entropy:labels
  optimizer=adamw ..."`, run for --steps steps with OMP_NUM_THREADS=T; the
  time per step is the program's `--profile` median of the steps after the
  first.
- onnxruntime-training (PyPI, in its own venv .venv-ort-training made from
  requirements-bench-training.txt: it conflicts with the test venv's
  onnxruntime): artifacts from `onnxruntime.training.artifacts`
  (CrossEntropyLoss, AdamW with the same hyper-parameters), then the
  on-device training API (Module, Optimizer: forward + backward, optimizer
  step, reset of the gradients) with intra-op threads T; median of the
  steps after the first. Two edits of the export make onnxruntime-training
  train the model DistOpt trains (see ORT_TRAIN): LayerNormalization names
  its optional outputs, and the parameters the exporter shared by Identity
  nodes become separate. The step losses of the two agree (printed).
- The machine's oneDNN GEMM rate: dnnl_sgemm on the step's largest GEMM
  shape (512 x 3072 x 768) and on 1024^3, T threads (gemm_rate.cpp, built
  here with the host compiler).

Model FLOPs per step count the matmuls only, forward and the two backward
GEMMs each (3x forward): 287.5 GFLOP. The rounds interleave the three
measurements.

With --cpu-time every figure is CPU time (user + system, all threads of
the process) instead of wall time, for a machine shared with other work,
where a process waiting for a core accumulates wall time and no CPU time:
DistOpt's step from its `--profile` CPU line (the median of the steps
after the first), onnxruntime-training's from time.process_time() around
each step (same median), the GEMM's from CLOCK_PROCESS_CPUTIME_ID around
each call. The table then gives the load average (1 minute) over the
rounds. Cache and memory bandwidth are still shared with the other work.

    .venv/bin/python bench/codegen/bench_train.py --build build [--threads 1 2]
        [--steps 5] [--rounds 3] [--no-ort] [--cpu-time]
"""
import argparse
import atexit
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
B, S, H, L, V = 4, 128, 768, 12, 8192
T = B * S
FWD_FLOPS = (L * (2 * T * (H * 3 * H + H * H + 2 * H * 4 * H) + 4 * B * S * S * H)
             + 2 * T * H * V)
STEP_FLOPS = 3 * FWD_FLOPS
ADAMW = dict(lr=1e-4, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=0.01)

ORT_TRAIN = r"""
import os, sys, time, statistics, numpy as np, onnx
from onnxruntime.training import artifacts, onnxblock
from onnxruntime.training.api import CheckpointState, Module, Optimizer
import onnxruntime as ort
path, work, threads, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ids, labels = np.load(sys.argv[5]), np.load(sys.argv[6])
lr, beta1, beta2, eps, weight_decay = (float(x) for x in sys.argv[7:12])
if not os.path.exists(work + "/training_model.onnx"):
    os.makedirs(work, exist_ok=True)
    model = onnx.load(path)
    # torch.onnx exports LayerNormalization with its output Y only, and
    # onnxruntime-training's gradient rule for it reads the optional Mean
    # and InvStdDev outputs (without them generate_artifacts stops in
    # gradient_builder_base.h: "i < node_->OutputDefs().size() was false").
    # Naming them computes the same Y.
    for node in model.graph.node:
        if node.op_type == "LayerNormalization" and len(node.output) == 1:
            node.output.extend([node.output[0] + "_mean", node.output[0] + "_inv_std"])
    # torch.onnx stores parameters with equal values once (at random
    # initialization every zero bias and every unit norm weight) and names
    # the others by Identity nodes; they are separate parameters, as
    # DistOpt trains them, so each gets its own copy here.
    inits = {i.name: i for i in model.graph.initializer}
    kept = []
    for node in model.graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
            model.graph.initializer.append(copy)
        else:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    # The parameters: every float initializer of rank 1 or more (the untied
    # head is exported as onnx::MatMul_N; the scalars are the exporter's
    # constants, such as GELU's exponent).
    params = [i.name for i in model.graph.initializer
              if i.data_type == onnx.TensorProto.FLOAT and len(i.dims) >= 1]
    artifacts.generate_artifacts(
        model, requires_grad=params, frozen_params=[],
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=onnxblock.optim.AdamW(betas=(beta1, beta2), eps=eps,
                                        weight_decay=weight_decay),
        artifact_directory=work)
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
# train_op_times.py: every session's node times, written as the sessions end.
if os.environ.get("ORT_PROFILE_PREFIX"):
    so.enable_profiling = True
    so.profile_file_prefix = os.environ["ORT_PROFILE_PREFIX"]
state = CheckpointState.load_checkpoint(work + "/checkpoint")
module = Module(work + "/training_model.onnx", state, work + "/eval_model.onnx",
                session_options=so)
if so.enable_profiling:
    # Each session's profile is named by the second it started in: the
    # optimizer's would share the training session's file and clobber it.
    time.sleep(1.1)
opt = Optimizer(work + "/optimizer_model.onnx", module)
opt.set_learning_rate(lr)
module.train()
times, cpu, losses = [], [], []
for _ in range(steps + 1):
    t0, c0 = time.perf_counter(), time.process_time()
    loss = module(ids, labels)
    opt.step()
    module.lazy_reset_grad()
    cpu.append(time.process_time() - c0)
    times.append(time.perf_counter() - t0)
    losses.append(float(loss))
print("ort-parameters", sum(p.data.size for _, p in state.parameters if p.requires_grad))
print("ort", statistics.median(times[1:]), statistics.median(cpu[1:]),
      " ".join("%.6f" % l for l in losses))
del opt, module
"""

GEMM = r"""
#include <dnnl.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include <algorithm>
static double cpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
int main(int argc, char **argv) {
  long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
  int reps = atoi(argv[4]);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  std::vector<double> t, cpu;
  for (int r = 0; r < reps + 1; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpuSeconds();
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    cpu.push_back(cpuSeconds() - c0);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin() + 1, t.end());
  std::sort(cpu.begin() + 1, cpu.end());
  printf("%.6f %.6f\n", t[1 + reps / 2], cpu[1 + reps / 2]);
}
"""


def gemm_rate(exe, threads, m, n, k, cpu):
    """GFLOP/s of one sgemm, the median call by wall or (cpu) CPU time."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([exe, str(m), str(n), str(k), "9"], capture_output=True,
                         text=True, env=env, check=True).stdout.split()
    return 2.0 * m * n * k / float(out[1 if cpu else 0]) / 1e9


def dist_step(exe, ids, labels, threads, steps, work, cpu):
    """The median step after the first (wall or, with cpu, CPU seconds) and
    the losses, from the program's --profile report."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([exe, f"input_ids={ids}", f"labels={labels}", "-o", work,
                        "--steps", str(steps + 1), "--profile"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{exe} failed:\n{p.stderr[-3000:]}")
    losses = [float(l.split()[-1]) for l in p.stdout.splitlines()
              if l.startswith("step")]
    head = "profile CPU time" if cpu else "profile:"
    for line in p.stderr.splitlines():
        if line.startswith(head):
            return float(line.split("median of the others")[1].split("ms")[0]) / 1e3, losses
    sys.exit(f"no '{head}' line in the program's --profile report")


def add_common_args(ap):
    """The options bench_train.py and train_op_times.py share."""
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=None)
    ap.add_argument("--fixtures-python",
                    default=os.path.join(ROOT, ".venv-fixtures", "bin", "python"))
    ap.add_argument("--ort-training-python",
                    default=os.path.join(ROOT, ".venv-ort-training", "bin", "python"))


def prepare(args):
    """The model (exported if missing), a work folder with the batch and
    the ORT script, and the DistOpt program compiled by BUILD's
    dist-compile: (model path, work, ids, labels, program, the number of
    parameters it trains, ORT script)."""
    models = args.models or os.path.join(args.build, "bench-models")
    path = os.path.join(models, "gpt_train.onnx")
    if not os.path.exists(path):
        subprocess.run([args.fixtures_python, os.path.join(HERE, "make_models.py"),
                        "--out", models, "--only", "gpt_train"], check=True)
    work = tempfile.mkdtemp(prefix="dist-bench-train-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # however it ends
    rng = np.random.default_rng(0)
    ids, labels = os.path.join(work, "ids.npy"), os.path.join(work, "labels.npy")
    np.save(ids, rng.integers(0, V, (B, S)).astype(np.int64))
    np.save(labels, rng.integers(0, V, (T,)).astype(np.int64))
    exe = os.path.join(work, "gpt_train.bin")
    train = ("loss=softmax-cross-entropy:labels optimizer=adamw lr={lr} beta1={beta1} "
             "beta2={beta2} epsilon={epsilon} weight-decay={weight_decay}").format(**ADAMW)
    p = subprocess.run([os.path.join(args.build, "bin", "dist-compile"), path,
                        f"--train={train}", "-o", exe], capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        sys.exit("dist-compile failed")
    # "dist-compile: gpt_train: training 149 tensor(s), 97737216 parameter(s)"
    dist_params = int(re.search(r"training \d+ tensor\(s\), (\d+) parameter", p.stderr)[1])
    ort_script = os.path.join(work, "ort_train.py")
    with open(ort_script, "w") as f:
        f.write(ORT_TRAIN)
    return path, work, ids, labels, exe, dist_params, ort_script


def run_ort(args, ort_script, path, work, threads, steps, ids, labels, env=None):
    """One onnxruntime-training process: its completed process."""
    return subprocess.run([args.ort_training_python, ort_script, path,
                           os.path.join(work, "ort"), str(threads), str(steps),
                           ids, labels]
                          + [str(ADAMW[k]) for k in ("lr", "beta1", "beta2",
                                                     "epsilon", "weight_decay")],
                          capture_output=True, text=True, env=env)


def ort_result(p, dist_params):
    """The `ort` line of a finished onnxruntime-training process, split
    (median wall and CPU seconds, then the losses), once it is known to
    train as many parameters as DistOpt."""
    trained = [int(l.split()[1]) for l in p.stdout.splitlines()
               if l.startswith("ort-parameters ")][0]
    if trained != dist_params:
        sys.exit(f"onnxruntime-training trains {trained} parameters, "
                 f"DistOpt {dist_params}: not the same training")
    return [l for l in p.stdout.splitlines() if l.startswith("ort ")][0].split()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(ap)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-ort", action="store_true",
                    help="measure DistOpt and the GEMM rate only")
    ap.add_argument("--cpu-time", action="store_true",
                    help="CPU time (user + system) instead of wall time, for "
                    "a loaded machine")
    args = ap.parse_args()
    path, work, ids, labels, exe, dist_params, ort_script = prepare(args)
    gemm_src = os.path.join(work, "gemm_rate.cpp")
    with open(gemm_src, "w") as f:
        f.write(GEMM)
    gemm = os.path.join(work, "gemm_rate")
    subprocess.run(["c++", "-O2", gemm_src, "-o", gemm, "-ldnnl"], check=True)
    res = {t: {"dist": [], "ort": [], "gemm": [], "gemm_sq": []} for t in args.threads}
    losses, load = {}, []
    ort_failure = None if not args.no_ort else ["not run (--no-ort)"]
    for r in range(args.rounds):
        for t in args.threads:
            load.append(os.getloadavg()[0])
            d, dl = dist_step(exe, ids, labels, t, args.steps, work, args.cpu_time)
            res[t]["dist"].append(d)
            losses["dist"] = dl
            if ort_failure is None:
                p = run_ort(args, ort_script, path, work, t, args.steps, ids, labels)
                if p.returncode == 0:
                    line = ort_result(p, dist_params)
                    res[t]["ort"].append(float(line[2 if args.cpu_time else 1]))
                    losses["ort"] = [float(x) for x in line[3:]]
                else:
                    # Still report DistOpt and the GEMM rate; say why the
                    # peer's column is empty.
                    ort_failure = p.stderr.strip().splitlines()[-1:] or ["exit %d" % p.returncode]
                    print(f"onnxruntime-training failed: {ort_failure[0]}", file=sys.stderr)
            res[t]["gemm"].append(gemm_rate(gemm, t, T, 4 * H, H, args.cpu_time))
            res[t]["gemm_sq"].append(gemm_rate(gemm, t, 1024, 1024, 1024, args.cpu_time))
            load.append(os.getloadavg()[0])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"Model FLOPs per step (matmuls, 3x forward): {STEP_FLOPS / 1e9:.1f} GFLOP")
    if ort_failure is None:
        print(f"Step-1 loss: DistOpt {losses['dist'][0]:.5f}, onnxruntime-training "
              f"{losses['ort'][0]:.5f}; last: {losses['dist'][-1]:.5f} / {losses['ort'][-1]:.5f}")
    else:
        print(f"onnxruntime-training: {ort_failure[0]}")
        print("DistOpt losses: " + ", ".join(f"{l:.5f}" for l in losses["dist"]))
    clock = "CPU " if args.cpu_time else ""
    print(f"Clock: {'CPU time (user + system)' if args.cpu_time else 'wall'}; "
          f"load average {min(load):.1f}-{max(load):.1f}")
    print(f"| threads | DistOpt {clock}s/step | onnxruntime-training {clock}s/step | "
          "speed-up | DistOpt GFLOP/s | oneDNN sgemm 512x3072x768 GFLOP/s | "
          "sgemm 1024^3 GFLOP/s | DistOpt / sgemm rate |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t in args.threads:
        d = statistics.median(res[t]["dist"])
        o = statistics.median(res[t]["ort"]) if res[t]["ort"] else float("nan")
        g = statistics.median(res[t]["gemm"])
        gs = statistics.median(res[t]["gemm_sq"])
        rate = STEP_FLOPS / d / 1e9
        print(f"| {t} | {d:.2f} | {o:.2f} | {o / d:.2f} | {rate:.1f} | {g:.1f} | "
              f"{gs:.1f} | {rate / max(g, gs):.2f} |")


if __name__ == "__main__":
    main()
