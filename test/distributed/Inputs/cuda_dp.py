"""The CUDA data-parallel program, for cuda-dp.test.

    cuda_dp.py OBJ_ROOT FIXTURES WORKDIR

Builds the MLP's data-parallel training step with --target=cuda (nvcc; the
runtime's NCCL collectives linked in) and runs it as a world of one: where a
GPU is visible it must train (NCCL is not needed for one rank); where none
is, it must exit 3 with the "no CUDA device" message. Where the runtime was
built without CUDA the check is skipped, saying so. Prints one status line:
BUILT-AND-RAN, BUILT-NO-GPU or SKIPPED.
"""
import os
import subprocess
import sys

obj, fixtures, work = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
recipe = open(os.path.join(obj, "lib", "distrt-link.txt")).read().split("\n")
if "cuda=1" not in recipe:
    print("SKIPPED: the runtime was built without CUDA (no nvcc at configure time)")
    sys.exit(0)
os.makedirs(work, exist_ok=True)
src, exe = os.path.join(work, "dp.cu"), os.path.join(work, "dp-cuda.bin")
subprocess.run([os.path.join(obj, "bin", "dist-compile"), "--target=cuda",
                os.path.join(fixtures, "small", "mlp_external.onnx"),
                "--input-shape=x:2x8", "--data-parallel",
                "--train=loss=mse:target optimizer=adam lr=0.01",
                "--emit-source=" + src, "-o", exe], check=True)
text = open(src).read()
assert "distrt_all_reduce(P.comm, &in, &out, DISTRT_REDUCE_MEAN)" in text, \
    "no all-reduce in the CUDA program"
# Multi-rank CUDA worlds need NCCL; a runtime without it still runs one rank.
nccl = "nccl" if any(l.startswith("cuda_link=") and "nccl" in l for l in recipe) \
    else "no NCCL: one rank only"
npy = os.path.join(here, "..", "..", "codegen", "Inputs", "npy.py")
x, t = os.path.join(work, "x.npy"), os.path.join(work, "t.npy")
subprocess.run([sys.executable, npy, "write", x, "f4", "2x8", "0.5", "-1"], check=True)
subprocess.run([sys.executable, npy, "write", t, "f4", "2x4", "1", "0"], check=True)
p = subprocess.run([exe, "x=" + x, "target=" + t, "--steps", "2", "-o", work],
                   capture_output=True, text=True)
if p.returncode == 3 and "cannot create the CUDA runtime context" in p.stderr:
    print("BUILT-NO-GPU (%s): %s" % (nccl, p.stderr.strip()))
    sys.exit(0)
if p.returncode != 0 or "step 2 loss" not in p.stdout:
    sys.exit("FAILED: " + p.stdout + p.stderr)
print("BUILT-AND-RAN (%s): %s" % (nccl, p.stdout.strip().replace("\n", "; ")))
