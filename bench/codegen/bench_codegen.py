#!/usr/bin/python3
"""Benchmarks of dist-compile and its programs (figures in docs/codegen.md).

1. Compile time ONNX -> executable (import + emit + host compiler + link)
   for the fixtures, each on its own, wall-clock median of 3.
2. A training step of the small GPT (test/fixtures/gpt2.onnx: 2 layers,
   hidden 64, 4 heads, vocab 512, seq 32; batch --batch) with Adam:
   the dist-compile program vs the same network written in PyTorch
   (python3-torch), same thread count. The program's time per step is
   (time of 1+N steps - time of 1 step) / N, which removes process start
   and weight loading.

    /usr/bin/python3 bench/codegen/bench_codegen.py --build build [--threads 1]
"""
import argparse
import atexit
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "test", "fixtures")


def timed(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return time.perf_counter() - t0, p.stdout


def compile_times(build, work):
    dc = os.path.join(build, "bin", "dist-compile")
    rows = []
    for name, extra in (("small/mlp.onnx", []), ("gpt2.onnx", []), ("bert.onnx", []),
                        ("llama.onnx", []),
                        ("resnet50.onnx", ["--dist-weights=ignore"])):
        ts = []
        for _ in range(3):
            t, _ = timed([dc, os.path.join(FIX, name), "-o",
                          os.path.join(work, "c.bin")] + extra)
            ts.append(t)
        src = os.path.join(work, "c.cpp")
        timed([dc, os.path.join(FIX, name), "--source-only", "-o", src] + extra)
        lines = sum(1 for _ in open(src))
        t_emit = min(timed([dc, os.path.join(FIX, name), "--source-only", "-o", src]
                           + extra)[0] for _ in range(3))
        rows.append((name, statistics.median(ts), t_emit, lines))
    return rows


class Block(object):
    pass


def torch_gpt_step_time(batch, threads, steps):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    H, NH, V, S, L = 64, 4, 512, 32, 2

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(H), nn.LayerNorm(H)
            self.qkv, self.proj = nn.Linear(H, 3 * H), nn.Linear(H, H)
            self.fc, self.out = nn.Linear(H, 4 * H), nn.Linear(4 * H, H)

        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.qkv(self.ln1(x)).split(H, dim=2)
            q, k, v = (t.view(B, S, NH, H // NH).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(H // NH)
            mask = torch.tril(torch.ones(S, S, dtype=torch.bool))
            att = att.masked_fill(~mask, float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(B, S, H)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, H), nn.Embedding(S, H)
            self.layers = nn.ModuleList([Layer() for _ in range(L)])
            self.lnf = nn.LayerNorm(H)
            self.head = nn.Linear(H, V, bias=False)

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(torch.arange(S))
            for layer in self.layers:
                x = layer(x)
            return self.head(self.lnf(x))

    model = GPT()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(0, V, (batch, S))
    labels = torch.randint(0, V, (batch, S))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(ids).reshape(-1, V), labels.reshape(-1))
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def program_step_time(build, work, batch, threads, steps):
    dc = os.path.join(build, "bin", "dist-compile")
    exe = os.path.join(work, "gpt_train.bin")
    timed([dc, os.path.join(FIX, "gpt2.onnx"), f"--default-batch={batch}",
           "--train=loss=softmax-cross-entropy:labels optimizer=adam lr=0.001",
           "-o", exe])
    rng = np.random.default_rng(0)
    ids = os.path.join(work, "ids.npy")
    lab = os.path.join(work, "lab.npy")
    np.save(ids, rng.integers(0, 512, (batch, 32)).astype(np.int64))
    np.save(lab, rng.integers(0, 512, (batch, 32)).astype(np.int64))
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    base = [exe, f"input_ids={ids}", f"labels={lab}", "-o", work]
    t1 = min(timed(base + ["--steps", "1"], env)[0] for _ in range(3))
    tn = min(timed(base + ["--steps", str(1 + steps)], env)[0] for _ in range(3))
    return (tn - t1) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dist-bench-codegen-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # however it ends
    print("compile time ONNX -> executable (median of 3; emit = import + "
          "generated source only, best of 3):")
    print(f"{'model':<18} {'total s':>8} {'emit s':>7} {'lines':>6}")
    for name, t, te, lines in compile_times(args.build, work):
        print(f"{name:<18} {t:8.2f} {te:7.2f} {lines:6d}")
    ours = program_step_time(args.build, work, args.batch, args.threads, args.steps)
    theirs = torch_gpt_step_time(args.batch, args.threads, args.steps)
    print(f"\nsmall GPT training step (batch {args.batch}, seq 32, Adam, "
          f"{args.threads} thread(s)):")
    print(f"  dist-compile program: {ours * 1e3:7.2f} ms/step")
    print(f"  PyTorch {__import__('torch').__version__}:      {theirs * 1e3:7.2f} ms/step")
    print(f"  ratio program/PyTorch: {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
