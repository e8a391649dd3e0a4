"""The CUDA pipeline program, for cuda-pp.test.

    cuda_pp.py OBJ_ROOT STAGED_MLIR WORKDIR

Builds the two-stage MLP (dist.stage regions) with --target=cuda
--compile-only: the generated stage functions, the driver's distrt_send /
distrt_recv calls and the per-list programs must compile under nvcc. Where
the runtime was built without CUDA the check is skipped, saying so. Prints
one status line: COMPILED or SKIPPED.
"""
import os
import subprocess
import sys

obj, staged, work = sys.argv[1:4]
recipe = open(os.path.join(obj, "lib", "distrt-link.txt")).read().split("\n")
if "cuda=1" not in recipe:
    print("SKIPPED: the runtime was built without CUDA (no nvcc at configure time)")
    sys.exit(0)
os.makedirs(work, exist_ok=True)
src, out = os.path.join(work, "pp.cu"), os.path.join(work, "pp-cuda.o")
subprocess.run([os.path.join(obj, "bin", "dist-compile"), "--target=cuda",
                staged, "--compile-only", "--emit-source=" + src, "-o", out],
               check=True)
text = open(src).read()
for needle in ("distrt_send(P.comm", "distrt_recv(P.comm", "switch (listOf[P.rank])",
               "dg::runMain(argc, argv, models, 1, true)"):
    assert needle in text, "missing in the CUDA program: " + needle
assert os.path.getsize(out) > 0, "no object file"
print("COMPILED: " + out)
