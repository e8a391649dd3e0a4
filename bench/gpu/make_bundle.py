#!/usr/bin/env python3
"""Builds the GPU check of issue 13 as a bundle that runs on a bare GPU host.

    make_bundle.py BUILD BUNDLE_DIR [--with-models]

The GPU machines this project borrows have CUDA and PyTorch but no LLVM,
MLIR, MPI or oneDNN, so the programs are compiled here and carried there:

- a runtime archive without MPI (bench/gpu/runtime: the same sources,
  single-process communicators) that the CUDA programs link against;
- every CUDA program of the check (dist-compile --target=cuda through that
  archive), and the CPU program of the same model built by BUILD's
  runtime, run here for the reference: inference outputs, training loss
  lines and saved state;
- the host libraries the programs load that such a machine lacks
  (oneDNN, its OpenCL loader, libgomp); cuBLAS, cuDNN and the CUDA runtime
  come from the GPU machine's own Python packages (run_bundle.py finds
  them).

With --with-models, the inference set of bench/codegen in BUILD/bench-models
(make_models.py) is added, timed against onnxruntime's CUDA provider.

BUNDLE_DIR/cases.json lists the cases; bench/gpu/run_bundle.py BUNDLE_DIR
runs them on the GPU and prints the tables. The checks compare the CUDA
program with the CPU program of the same model on the same inputs: the CPU
programs are checked against onnxruntime by the numerical suites, so this
is a check of the CUDA path.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "test", "fixtures")

# The timed training step: a GPT layer stack large enough to be
# compute-bound on one GPU (1.75B parameters), bf16 mixed precision, AdamW.
BIG = dict(layers=8, hidden=4096, heads=32, seq=2048, vocab=32000, batch=4)


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def build_runtime(work):
    """The MPI-free runtime archive; returns its link recipe."""
    rt = os.path.join(work, "runtime-build")
    run(["cmake", "-G", "Ninja", "-S", os.path.join(ROOT, "bench", "gpu", "runtime"),
         "-B", rt, "-DCMAKE_BUILD_TYPE=Release",
         "-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON"], stdout=subprocess.DEVNULL)
    run(["ninja", "-C", rt, "DistRuntime"], stdout=subprocess.DEVNULL)
    recipe = os.path.join(rt, "lib", "distrt-link.txt")
    if "cuda=1" not in open(recipe).read().split("\n"):
        sys.exit("make_bundle: the runtime was built without CUDA (no nvcc)")
    return recipe


class Bundle:
    def __init__(self, build, out, recipe):
        self.dc = os.path.join(build, "bin", "dist-compile")
        self.mg = os.path.join(build, "bin", "dist-modelgen")
        self.out, self.recipe = out, recipe
        self.work = os.path.join(out, "..", os.path.basename(out) + "-work")
        os.makedirs(self.work, exist_ok=True)
        self.cases = []
        self.rng = np.random.default_rng(0)

    def compile(self, name, onnx_path, flags, cuda):
        exe = os.path.join(self.out if cuda else self.work,
                           name + (".cuda" if cuda else ".cpu"))
        env = dict(os.environ)
        if cuda:
            env["DIST_RUNTIME_LINK"] = self.recipe
        run([self.dc, onnx_path, "-o", exe] + flags +
            (["--target=cuda"] if cuda else []), env=env)
        return exe

    def inputs(self, name, spec):
        """spec: [(input name, dims, 'ids:VOCAB' | 'ones' | 'normal')]."""
        args = []
        for iname, dims, kind in spec:
            if kind.startswith("ids:"):
                a = self.rng.integers(0, int(kind[4:]), dims).astype(np.int64)
            elif kind == "ones":
                a = np.ones(dims, np.int64)
            else:
                a = self.rng.standard_normal(dims).astype(np.float32)
            rel = os.path.join("inputs", f"{name}.{iname}.npy")
            os.makedirs(os.path.join(self.out, "inputs"), exist_ok=True)
            np.save(os.path.join(self.out, rel), a)
            args.append(f"{iname}={rel}")
        return args

    def here(self, args):
        """NAME=FILE arguments with FILE relative to the bundle, made absolute."""
        return [a.split("=", 1)[0] + "=" + os.path.join(self.out, a.split("=", 1)[1])
                for a in args]

    def infer(self, name, onnx_path, spec, flags, weights_dir=None, tol=1e-3,
              timed=False):
        """A forward program: the CUDA outputs against the CPU program's;
        `timed` also times it (and onnxruntime's CUDA provider on the same
        file, which then travels in the bundle)."""
        if spec is None:  # a bench/codegen model: its benchmarks' inputs
            sys.path.insert(0, os.path.join(ROOT, "bench", "codegen"))
            from bench_inputs import make_inputs
            os.makedirs(os.path.join(self.out, "inputs"), exist_ok=True)
            _, full, _ = make_inputs(onnx_path, os.path.join(self.out, "inputs"), name + ".")
            args = [a.split("=", 1)[0] + "=" + os.path.relpath(a.split("=", 1)[1], self.out)
                    for a in full]
        else:
            args = self.inputs(name, spec)
        cpu = self.compile(name, onnx_path, flags, False)
        self.compile(name, onnx_path, flags, True)
        ref = os.path.join(self.out, "ref", name)
        os.makedirs(ref, exist_ok=True)
        wd = ["--weights-dir", weights_dir] if weights_dir else []
        run([cpu] + self.here(args) + ["-o", ref] + wd)
        case = dict(name=name, kind="infer", exe=name + ".cuda", args=args,
                    weights_dir=os.path.relpath(weights_dir, ROOT) if weights_dir else None,
                    ref="ref/" + name, tol=tol)
        if timed:
            os.makedirs(os.path.join(self.out, "models"), exist_ok=True)
            shutil.copy(onnx_path, os.path.join(self.out, "models", name + ".onnx"))
            case.update(timed=True, onnx="models/" + name + ".onnx")
        self.cases.append(case)

    def train(self, name, onnx_path, spec, flags, steps, tol, state_tol):
        """A training program: loss lines and the saved state after
        `steps` steps against the CPU program's."""
        args = self.inputs(name, spec)
        cpu = self.compile(name, onnx_path, flags, False)
        self.compile(name, onnx_path, flags, True)
        ref = os.path.join(self.out, "ref", name)
        os.makedirs(ref, exist_ok=True)
        p = run([cpu] + self.here(args) + ["--steps", str(steps), "-o", self.work,
                                "--save-state", os.path.join(ref, "state")],
                capture_output=True, text=True)
        open(os.path.join(ref, "losses.txt"), "w").write(p.stdout)
        # The state tensors above 1 MiB stay here (a ResNet's would not fit
        # what the device tool carries); the loss lines cover every weight.
        state = os.path.join(ref, "state")
        for f in os.listdir(state):
            if os.path.getsize(os.path.join(state, f)) > 2**20:
                os.remove(os.path.join(state, f))
        self.cases.append(dict(name=name, kind="train", exe=name + ".cuda", args=args,
                               steps=steps, ref="ref/" + name, tol=tol, state_tol=state_tol))

    def timed(self, name, onnx_path, spec, flags, steps, flops):
        """A CUDA program that is only timed (too large for a CPU reference)."""
        args = self.inputs(name, spec)
        self.compile(name, onnx_path, flags, True)
        self.cases.append(dict(name=name, kind="time", exe=name + ".cuda", args=args,
                               steps=steps, flops=flops, config=BIG))


def gpt_flops(L, H, S, V, B):
    """Model FLOPs of one training step (3x the forward matmuls; attention
    counted over the full s x s square, as Megatron-LM counts it)."""
    T = B * S
    fwd = L * (2 * T * (H * 3 * H + H * H + 2 * H * 4 * H) + 4 * B * S * S * H) + 2 * T * H * V
    return 3 * fwd


def main():
    argv = [a for a in sys.argv[1:] if a != "--with-models"]
    with_models = len(argv) < len(sys.argv) - 1
    if len(argv) != 2:
        sys.exit(__doc__)
    build, out = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    b = Bundle(build, out, build_runtime(out + "-work"))
    ig = ["--dist-weights=ignore"]

    # Inference on exported models (real weights where the fixture has them).
    b.infer("gpt2", os.path.join(FIX, "gpt2.onnx"), [("input_ids", [2, 32], "ids:512")],
            ["--input-shape=input_ids:2x32"], weights_dir=FIX)
    b.infer("bert", os.path.join(FIX, "bert.onnx"),
            [("input_ids", [2, 32], "ids:512"), ("attention_mask", [2, 32], "ones")],
            ["--input-shape=input_ids:2x32", "--input-shape=attention_mask:2x32"],
            weights_dir=FIX)
    b.infer("llama", os.path.join(FIX, "llama.onnx"), [("input_ids", [2, 32], "ids:512")],
            ["--input-shape=input_ids:2x32"], weights_dir=FIX)
    b.infer("mobilenetv2", os.path.join(FIX, "mobilenetv2.onnx"),
            [("input", [2, 3, 224, 224], "normal")], ["--input-shape=input:2x3x224x224"] + ig)
    b.infer("resnet50", os.path.join(FIX, "resnet50.onnx"),
            [("input", [2, 3, 224, 224], "normal")], ["--input-shape=input:2x3x224x224"] + ig)

    # The inference benchmark set of bench/codegen (make_models.py), timed,
    # where BUILD/bench-models holds it (1-40 MB each: not for the device
    # tool's 64 MiB; for a GPU machine that builds and runs).
    models = os.path.join(build, "bench-models")
    if with_models:
        for m in ("gpt2", "llama", "mistral", "bert", "vit", "whisper_enc", "resnet18",
                  "convnext", "efficientnet_b0", "mobilenet_v3s"):
            path = os.path.join(models, m + ".onnx")
            if os.path.exists(path):
                b.infer("bench_" + m, path, None, [], tol=1e-3, timed=True)

    # Training steps (graph-only models: both programs draw the same
    # initial weights by the graph-only rule).
    gen = os.path.join(b.work, "models")
    os.makedirs(gen, exist_ok=True)

    def modelgen(name, *args):
        path = os.path.join(gen, name + ".onnx")
        run([b.mg] + list(args) + ["-o", path], stdout=subprocess.DEVNULL)
        return path

    gpt = modelgen("gpt_tiny", "gpt", "--layers", "2", "--hidden", "64", "--heads", "4",
                   "--seq", "16", "--vocab", "96", "--micro-batch", "2")
    tok = [("input_ids", [2, 16], "ids:96"), ("labels", [2, 16], "ids:96")]
    ce = "loss=softmax-cross-entropy:labels"
    b.train("gpt_tiny_adamw", gpt, tok, ig + [f"--train={ce} optimizer=adamw lr=1e-3"],
            steps=5, tol=1e-4, state_tol=1e-3)
    b.train("gpt_tiny_bf16", gpt, tok,
            ig + [f"--train={ce} optimizer=adamw lr=1e-3 mixed-precision=bf16"],
            steps=5, tol=2e-2, state_tol=5e-2)
    llama = modelgen("llama_tiny", "llama", "--layers", "2", "--hidden", "64", "--heads", "4",
                     "--kv-heads", "2", "--ffn-hidden", "128", "--seq", "16", "--vocab", "96",
                     "--micro-batch", "2")
    b.train("llama_tiny_sgd", llama, tok, ig + [f"--train={ce} optimizer=sgd lr=0.05"],
            steps=5, tol=1e-4, state_tol=1e-3)
    resnet = modelgen("resnet_tiny", "resnet", "--depth", "18", "--image", "32",
                      "--classes", "10", "--micro-batch", "4")
    b.train("resnet18_momentum", resnet,
            [("input", [4, 3, 32, 32], "normal"), ("labels", [4], "ids:10")],
            ig + [f"--train={ce} optimizer=momentum lr=0.01"],
            steps=3, tol=1e-3, state_tol=1e-2)

    # The timed step.
    c = BIG
    big = modelgen("gpt_big", "gpt", "--layers", str(c["layers"]), "--hidden", str(c["hidden"]),
                   "--heads", str(c["heads"]), "--seq", str(c["seq"]), "--vocab", str(c["vocab"]),
                   "--micro-batch", str(c["batch"]))
    shape = [c["batch"], c["seq"]]
    b.timed("gpt_big_bf16", big,
            [("input_ids", shape, f"ids:{c['vocab']}"), ("labels", shape, f"ids:{c['vocab']}")],
            ig + [f"--train={ce} optimizer=adamw lr=1e-4 mixed-precision=bf16"], steps=6,
            flops=gpt_flops(c["layers"], c["hidden"], c["seq"], c["vocab"], c["batch"]))

    # Host libraries a bare GPU machine lacks.
    lib = os.path.join(out, "lib")
    os.makedirs(lib)
    ldd = subprocess.run(["ldd", os.path.join(out, "gpt_tiny_adamw.cuda")],
                         capture_output=True, text=True, check=True).stdout
    ldd += subprocess.run(["ldd", "/usr/lib/x86_64-linux-gnu/libdnnl.so.2"],
                          capture_output=True, text=True, check=True).stdout
    for line in ldd.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and any(
                k in parts[0] for k in ("libdnnl", "libOpenCL", "libgomp")):
            shutil.copy(parts[2], os.path.join(lib, parts[0]))
    json.dump(b.cases, open(os.path.join(out, "cases.json"), "w"), indent=1)
    shutil.copy(os.path.join(ROOT, "bench", "gpu", "run_bundle.py"), out)
    # Compressed, the bundle fits what the device tool carries (64 MiB).
    tar = out + ".tar.xz"
    run(["tar", "-C", os.path.dirname(out), "-cJf", tar, os.path.basename(out)],
        env=dict(os.environ, XZ_OPT="-T2 -6"))
    print(f"bundle: {tar} ({os.path.getsize(tar) / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
