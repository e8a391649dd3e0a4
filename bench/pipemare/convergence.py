#!/usr/bin/env python3
"""PipeMare's convergence beside synchronous 1F1B, PipeDream (weight
stashing) and plain asynchronous updates (PipeMare's order without its two
corrections), on a small LLaMA, an MLP and a small ResNet (batch norm):
each trained by the
product's pipelined programs (dist-opt --dist-plan, dist-compile --train,
mpirun) for the same steps on the same fixed batch, with the loss after
every step and the predicted peak memory per stage of each plan.

Usage: python3 bench/pipemare/convergence.py --build build [--steps 40]
Prints one table per model (Markdown) for docs/benchmarks.md."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "numerics"))
import run_distributed  # noqa: E402

# (label, --dist-plan schedule part). "async" is PipeMare's order with
# neither correction: the learning rate not rescheduled, no velocity.
SCHEDULES = [
    ("1F1B (synchronous)", "schedule=1f1b"),
    ("PipeDream (stash)", "schedule=pipedream"),
    ("PipeMare", "schedule=pipemare,pipemare_warmup={warmup}"),
    ("async, no corrections", "schedule=pipemare,pipemare_decay=1"),
]


def models(work, tools):
    """A small LLaMA (its LM head is untied: a weight tied across stages
    does not run under asynchronous schedules), an eight-layer MLP
    classifier, both graph-only (docs/codegen.md's initialization), and
    run_networks.py's small ResNet (batch norm), each on one fixed batch of
    16 with random labels (memorization)."""
    rng = np.random.default_rng(7)
    llama = os.path.join(work, "llama.onnx")
    subprocess.run([os.path.join(tools, "dist-modelgen"), "llama", "--layers",
                    "4", "--hidden", "64", "--heads", "4", "--kv-heads", "2",
                    "--ffn-hidden", "128", "--seq", "32", "--vocab", "256",
                    "-o", llama], check=True, capture_output=True)
    ids = rng.integers(0, 256, (16, 32)).astype(np.int64)
    labels = np.roll(ids, -1, axis=1)
    mlp = os.path.join(work, "mlp.onnx")
    subprocess.run([os.path.join(tools, "dist-modelgen"), "mlp", "--layers",
                    "8", "--hidden", "64", "--input", "32", "--classes", "10",
                    "-o", mlp], check=True, capture_output=True)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    classes = rng.integers(0, 10, (16,)).astype(np.int64)
    import run_networks  # noqa: E402 (beside run_distributed)
    resnet = os.path.join(work, "resnet.onnx")
    run_networks.small_resnet(resnet)
    images = rng.standard_normal((16, 3, 32, 32)).astype(np.float32)
    image_classes = rng.integers(0, 10, (16,)).astype(np.int64)
    return [
        ("small LLaMA (4 layers, hidden 64, GQA 4/2 heads, seq 32)", llama,
         "input_ids:2x32",
         "loss=softmax-cross-entropy:labels optimizer=adam lr=1e-2",
         [("input_ids", ids), ("labels", labels)]),
        ("MLP (8 hidden layers of 64, 10 classes)", mlp, "input:2x32",
         "loss=softmax-cross-entropy:labels optimizer=adam lr=1e-2",
         [("input", x), ("labels", classes)]),
        ("small ResNet (conv, batch norm, 2 residual stages, 10 classes)",
         resnet, "image:2x3x32x32",
         "loss=softmax-cross-entropy:labels optimizer=adam lr=1e-2",
         [("image", images), ("labels", image_classes)]),
    ]


def run(tools, work, name, model, shape, train, feeds, plan, steps, ranks):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    planned = os.path.join(d, "planned.mlir")
    p = subprocess.run([os.path.join(tools, "dist-opt"), model,
                        "--input-shape=" + shape, "--dist-cluster=cpu-xeon-2s:2",
                        "--dist-plan=" + plan, "--dist-batch=16", "-o", planned],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-1500:])
    memory = [float(m.group(1)) * {"B": 1 / 1024, "KiB": 1, "MiB": 1024}[m.group(2)]
              for m in re.finditer(r"stage \d+ peak memory ([\d.]+) (B|KiB|MiB)",
                                   p.stdout)]
    exe = os.path.join(d, "pp.bin")
    p = subprocess.run([os.path.join(tools, "dist-compile"), planned,
                        "--train=" + train, "-o", exe], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-1500:])
    args = run_distributed.save_feeds(d, feeds)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    p = subprocess.run(run_distributed.mpirun_command(ranks) +
                       [exe, "--steps", str(steps), "--weights-dir",
                        os.path.dirname(model), "-o", d] + args,
                       capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError((p.stdout + p.stderr)[-1500:])
    return run_distributed.curve_of(p.stdout), memory


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--pp", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=64,
                    help="PipeMare's learning-rate warm-up, in updates")
    ap.add_argument("-k", help="only the models whose title contains this")
    a = ap.parse_args()
    tools = os.path.join(a.build, "bin")
    with tempfile.TemporaryDirectory(prefix="pipemare-") as work:
        for title, model, shape, train, feeds in models(work, tools):
            if a.k and a.k not in title:
                continue
            print(f"\n{title}: pp={a.pp}, 8 micro-batches of 2 per step, "
                  f"{a.steps} steps on one fixed batch of 16; `{train}`\n")
            print("| schedule | loss at step 1 | step {0} | step {1} | step {2} "
                  "| predicted peak memory per stage (KiB) |".format(
                      a.steps // 4, a.steps // 2, a.steps))
            print("|---|---:|---:|---:|---:|---|")
            for label, sched in SCHEDULES:
                plan = f"pp={a.pp},mbs=2," + sched.format(warmup=a.warmup)
                tag = re.sub(r"\W+", "_", title[:9] + label)
                try:
                    curve, memory = run(tools, work, tag, model, shape, train,
                                        feeds, plan, a.steps, a.pp)
                except RuntimeError as e:
                    print(f"| {label} | failed: {str(e).splitlines()[-1]} |||||")
                    continue
                picks = [curve[0], curve[a.steps // 4 - 1], curve[a.steps // 2 - 1],
                         curve[-1]]
                cells = " | ".join(f"{v:.4f}" for v in picks)
                mem = " / ".join(f"{m:.0f}" for m in memory)
                print(f"| {label} (`{plan}`) | {cells} | {mem} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
