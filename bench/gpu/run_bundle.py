#!/usr/bin/env python3
"""Runs the GPU check that bench/gpu/make_bundle.py built, on the GPU.

    run_bundle.py BUNDLE_DIR [--root REPO] [--out DIR] [--only NAME,...]

Needs python3 with numpy; cuBLAS, cuDNN and the CUDA runtime are taken from
the machine's NVIDIA Python packages (PyTorch's) when the system has none;
PyTorch, when importable, also gives the measured bf16 GEMM rate and the
same GPT training step for comparison. Prints three markdown tables: the
CUDA programs against the CPU programs (inference outputs, training losses
and saved state), the timed training step (s/step, model TFLOP/s, MFU) and
PyTorch's step; with a bundle made --with-models, a fourth: the inference
set's time against onnxruntime's CUDA provider (when onnxruntime-gpu is
importable). Logs go to --out.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np


def library_path(bundle):
    dirs = [os.path.join(bundle, "lib")]
    for site in sys.path:
        dirs += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
    dirs += [os.environ.get("LD_LIBRARY_PATH", "")]
    return ":".join(d for d in dirs if d)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if not np.all(np.isfinite(a)):
        return float("nan")
    n = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (n if n > 0 else 1.0))


def losses(text):
    return [float(m.group(1)) for m in re.finditer(r"^step \d+ loss ([-0-9.eE+naif]+)", text, re.M)]


class Runner:
    def __init__(self, bundle, root, out):
        self.bundle, self.root, self.out = bundle, root, out
        self.env = dict(os.environ, LD_LIBRARY_PATH=library_path(bundle))
        self.rows, self.results = [], {}

    def exe(self, case, extra, timeout):
        args = [os.path.join(self.bundle, case["exe"])]
        args += [a.split("=", 1)[0] + "=" + os.path.join(self.bundle, a.split("=", 1)[1])
                 for a in case["args"]]
        if case.get("weights_dir"):
            args += ["--weights-dir", os.path.join(self.root, case["weights_dir"])]
        t0 = time.time()
        try:
            p = subprocess.run(args + extra, capture_output=True, text=True,
                               env=self.env, timeout=timeout)
            rc, so, se = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, so, se = "timeout", str(e.stdout or ""), str(e.stderr or "")
        wall = time.time() - t0
        with open(os.path.join(self.out, case["name"] + ".log"), "w") as f:
            f.write(f"$ {' '.join(args + extra)}\nrc={rc} wall={wall:.1f}s\n"
                    f"--- stdout\n{so}\n--- stderr\n{se}\n")
        return rc, so, se, wall

    def check(self, case):
        name, ref = case["name"], os.path.join(self.bundle, case["ref"])
        work = os.path.join("/tmp", "gpu-out", name)
        os.makedirs(work, exist_ok=True)
        if case["kind"] == "infer":
            rc, so, se, wall = self.exe(case, ["-o", work], 120)
            if rc != 0:
                return self.row(name, "infer", "FAILED", f"rc={rc}: {se.strip()[-300:]}")
            errs = {f: rel_err(np.load(os.path.join(work, f)), np.load(os.path.join(ref, f)))
                    for f in sorted(os.listdir(ref)) if f.endswith(".npy")}
            worst = max(errs.values())
            ok = worst <= case["tol"]
            return self.row(name, "infer", "ok" if ok else "MISMATCH",
                            ", ".join(f"{k[:-4]} {v:.1e}" for k, v in errs.items()),
                            worst=worst, tol=case["tol"], wall=wall)
        state = os.path.join(work, "state")
        rc, so, se, wall = self.exe(case, ["--steps", str(case["steps"]), "-o", work,
                                           "--save-state", state], 240)
        if rc != 0:
            return self.row(name, "train", "FAILED", f"rc={rc}: {se.strip()[-300:]}")
        got, want = losses(so), losses(open(os.path.join(ref, "losses.txt")).read())
        if len(got) != len(want) or not got:
            return self.row(name, "train", "FAILED", f"loss lines {got} vs {want}")
        loss_err = max(abs(g - w) / max(abs(w), 1e-12) for g, w in zip(got, want))
        sref = os.path.join(ref, "state")
        st = {f: rel_err(np.load(os.path.join(state, f)), np.load(os.path.join(sref, f)))
              for f in sorted(os.listdir(sref)) if f.endswith(".npy")}
        worst_t = max(st, key=lambda k: st[k])
        ok = loss_err <= case["tol"] and st[worst_t] <= case["state_tol"]
        detail = (f"losses {' '.join(f'{g:.5g}' for g in got)} (CPU {' '.join(f'{w:.5g}' for w in want)}); "
                  f"max loss rel. error {loss_err:.1e}; worst state tensor {worst_t[:-4]} {st[worst_t]:.1e}")
        return self.row(name, "train", "ok" if ok else "MISMATCH", detail,
                        worst=loss_err, state=st[worst_t], wall=wall)

    def time_infer(self, case):
        """ms per run of a forward program (median of 20 after the first)
        and of onnxruntime's CUDA provider on the same file and inputs."""
        rc, so, se, wall = self.exe(case, ["-o", "/tmp/gpu-out", "--repeat", "21", "--time"], 120)
        m = re.search(r"mean ([0-9.]+) ms, min ([0-9.]+) ms", so)
        ours = float(m.group(1)) if rc == 0 and m else float("nan")
        ort_ms = float("nan")
        try:
            import onnxruntime as ort
            if "CUDAExecutionProvider" in ort.get_available_providers():
                s = ort.InferenceSession(os.path.join(self.bundle, case["onnx"]),
                                         providers=["CUDAExecutionProvider"])
                feeds = {a.split("=", 1)[0]: np.load(os.path.join(self.bundle, a.split("=", 1)[1]))
                         for a in case["args"]}
                s.run(None, feeds)
                ts = []
                for _ in range(20):
                    t0 = time.perf_counter()
                    s.run(None, feeds)
                    ts.append(time.perf_counter() - t0)
                ort_ms = 1e3 * statistics.median(ts)
        except ImportError:
            pass
        self.results[case["name"]].update(ms=ours, ort_cuda_ms=ort_ms)
        return ours, ort_ms

    def row(self, name, kind, status, detail, **kw):
        self.rows.append((name, kind, status, detail))
        self.results[name] = dict(kind=kind, status=status, detail=detail, **kw)
        print(f"[{name}] {status}: {detail}", flush=True)

    def timed(self, case, peak_measured):
        rc, so, se, wall = self.exe(case, ["--steps", str(case["steps"]), "-o",
                                           "/tmp/gpu-out", "--time", "--profile"], 240)
        if rc != 0:
            self.results[case["name"]] = dict(status="FAILED", detail=se[-500:])
            print(f"[{case['name']}] FAILED rc={rc}: {se.strip()[-800:]}", flush=True)
            return None
        m = re.search(r"mean ([0-9.]+) ms, min ([0-9.]+) ms", so)
        mean, best = float(m.group(1)), float(m.group(2))
        first = re.search(r"first \(it loads the weights\) ([0-9.]+) ms", so)
        tf = case["flops"] / (mean / 1e3) / 1e12
        r = dict(status="ok", mean_ms=mean, min_ms=best, tflops=tf, wall=wall,
                 first_ms=float(first.group(1)) if first else None,
                 losses=losses(so), mfu_datasheet=tf / 989.0,
                 mfu_measured=tf / peak_measured if peak_measured else None)
        self.results[case["name"]] = r
        print(f"[{case['name']}] {json.dumps(r)}", flush=True)
        return r


def torch_peer(c, steps=6):
    """The same GPT step in PyTorch (bf16 autocast, fused AdamW), with
    fused attention (scaled_dot_product_attention) and with the unfused
    softmax(QK^T)V the DistOpt program computes."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    L, H, NH, S, V, B = c["layers"], c["hidden"], c["heads"], c["seq"], c["vocab"], c["batch"]

    class Block(nn.Module):
        def __init__(self, fused):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(H), nn.LayerNorm(H)
            self.qkv, self.proj = nn.Linear(H, 3 * H), nn.Linear(H, H)
            self.fc, self.out = nn.Linear(H, 4 * H), nn.Linear(4 * H, H)
            self.fused = fused

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).split(H, -1)
            q, k, v = (t.view(B, S, NH, H // NH).transpose(1, 2) for t in (q, k, v))
            if self.fused:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                s = (q @ k.transpose(-1, -2)) * (H // NH) ** -0.5
                mask = torch.ones(S, S, dtype=torch.bool, device=x.device).tril()
                a = s.masked_fill(~mask, float("-inf")).softmax(-1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(B, S, H))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self, fused):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, H), nn.Embedding(S, H)
            self.blocks = nn.ModuleList(Block(fused) for _ in range(L))
            self.ln = nn.LayerNorm(H)

        def forward(self, ids, labels):
            x = self.wte(ids) + self.wpe(torch.arange(S, device=ids.device))
            for b in self.blocks:
                x = b(x)
            logits = self.ln(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.float().view(-1, V), labels.view(-1))

    out = {}
    for fused in (True, False):
        torch.manual_seed(0)
        model = GPT(fused).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, V, (B, S), device="cuda")
        labels = torch.randint(0, V, (B, S), device="cuda")
        times = []
        for i in range(steps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(ids, labels)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        out["sdpa" if fused else "unfused"] = dict(
            mean_ms=1e3 * statistics.mean(times[1:]), min_ms=1e3 * min(times[1:]),
            peak_gib=torch.cuda.max_memory_allocated() / 2**30)
        del model, opt
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return out


def gemm_rate():
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(20):
        a @ b
    e1.record()
    torch.cuda.synchronize()
    return 2 * 8192 ** 3 * 20 / (e0.elapsed_time(e1) / 1e3) / 1e12


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--root", default=".")
    ap.add_argument("--out", default="/tmp/gpu-logs")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bundle = os.path.abspath(a.bundle)
    cases = json.load(open(os.path.join(bundle, "cases.json")))
    if a.only:
        cases = [c for c in cases if c["name"] in a.only.split(",")]
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip()
    except FileNotFoundError:
        gpu = "none (no nvidia-smi)"
    print("GPU:", gpu, flush=True)
    r = Runner(bundle, os.path.abspath(a.root), a.out)
    peak = None
    if not a.no_torch:
        try:
            peak = gemm_rate()
            print(f"measured bf16 GEMM rate (torch, 8192^3): {peak:.0f} TFLOP/s", flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on without it
            print("no torch GEMM rate:", e, flush=True)
    for c in cases:
        if c["kind"] != "time":
            r.check(c)
    speed = [(c["name"],) + r.time_infer(c) for c in cases if c.get("timed")]
    timed = [c for c in cases if c["kind"] == "time"]
    for c in timed:
        r.timed(c, peak)
    peer = None
    if timed and not a.no_torch:
        try:
            peer = torch_peer(timed[0]["config"])
            print("torch:", json.dumps(peer), flush=True)
        except Exception as e:  # noqa: BLE001
            print("no torch peer:", e, flush=True)
    json.dump(dict(gpu=gpu, gemm_tflops=peak, results=r.results, torch=peer),
              open(os.path.join(a.out, "results.json"), "w"), indent=1)

    print(f"\nGPU: {gpu}\n")
    print("| case | kind | result | detail |\n| --- | --- | --- | --- |")
    for row in r.rows:
        print("| " + " | ".join(row) + " |")
    if speed:
        print("\n| model | DistOpt CUDA ms (mean of 20) | onnxruntime CUDA EP ms (median of 20) | ratio |")
        print("| --- | ---: | ---: | ---: |")
        for name, ours, theirs in speed:
            print(f"| {name[len('bench_'):]} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} |")
    for c in timed:
        res = r.results.get(c["name"], {})
        if res.get("status") != "ok":
            continue
        cfg = c["config"]
        what = (f"GPT {cfg['layers']}x{cfg['hidden']}, seq {cfg['seq']}, batch {cfg['batch']}, "
                f"vocab {cfg['vocab']}, bf16 AdamW")
        print(f"\n| program | model | ms/step (mean, min) | model TFLOP/s | MFU vs 989 | vs measured GEMM |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        mm = f"{100 * res['mfu_measured']:.1f}%" if res.get("mfu_measured") else "n/a"
        print(f"| DistOpt CUDA | {what} | {res['mean_ms']:.1f}, {res['min_ms']:.1f} | "
              f"{res['tflops']:.1f} | {100 * res['mfu_datasheet']:.1f}% | {mm} |")
        for k, v in (peer or {}).items():
            tf = c["flops"] / (v["mean_ms"] / 1e3) / 1e12
            mm = f"{100 * tf / peak:.1f}%" if peak else "n/a"
            print(f"| PyTorch eager ({k}) | same | {v['mean_ms']:.1f}, {v['min_ms']:.1f} | "
                  f"{tf:.1f} | {100 * tf / 989:.1f}% | {mm} |")
    bad = [n for n, res in r.results.items() if res.get("status") != "ok"]
    print("\nall checks passed" if not bad else f"\nnot ok: {', '.join(bad)}")


if __name__ == "__main__":
    main()
