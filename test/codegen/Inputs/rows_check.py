"""Checks emit-data-rows.mlir's program: y = concat(e, e) on the last axis
with e = x [2, 1, 4, 16] expanded to [2, 3, 4, 16] (no numpy)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npy  # noqa: E402

d = sys.argv[1]
_, x = npy.read(os.path.join(d, "x.npy"))
shape, y = npy.read(os.path.join(d, "y.npy"))
assert shape == [2, 3, 4, 32], shape
for b in range(2):
    for h in range(3):
        for s in range(4):
            for c in range(32):
                got = y[((b * 3 + h) * 4 + s) * 32 + c]
                want = x[(b * 4 + s) * 16 + c % 16]
                if got != want:
                    sys.exit(f"y[{b},{h},{s},{c}] = {got}, want {want}")
print("ok")
