"""Checks emit-loops.mlir's program: y = (gelu_tanh(x) + mask)^2, the mask
[2, 1, 8, 16] broadcast over the 4 heads of x [2, 4, 8, 16] (no numpy)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npy  # noqa: E402

d = sys.argv[1]
_, x = npy.read(os.path.join(d, "x.npy"))
_, mask = npy.read(os.path.join(d, "mask.npy"))
shape, y = npy.read(os.path.join(d, "y.npy"))
assert shape == [2, 4, 8, 16], shape
worst = 0.0
for i, v in enumerate(x):
    b, r = i // 512, i % 128
    g = 0.5 * v * (1 + math.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))
    want = (g + mask[b * 128 + r]) ** 2
    worst = max(worst, abs(y[i] - want) / (abs(want) + 1e-6))
if worst > 1e-5:
    sys.exit(f"max relative error {worst:.3g} > 1e-5")
print(f"ok: max relative error {worst:.2g}")
