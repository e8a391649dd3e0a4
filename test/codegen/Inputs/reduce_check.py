"""Checks emit-reduce-rows.mlir's program exactly: each output is the
float32 rounding of a double sum that adds the items in row order, as the
program does (no numpy)."""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npy  # noqa: E402


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


d = sys.argv[1]
_, x = npy.read(os.path.join(d, "x.npy"))
X = lambda i, j, c: x[(i * 4 + j) * 70 + c]  # noqa: E731
want = {
    "sum": [f32(sum(X(i, j, c) for i in range(3) for j in range(4))) for c in range(70)],
    "l2": [f32(math.sqrt(sum(X(i, j, c) ** 2 for i in range(3) for j in range(4))))
           for c in range(70)],
    "mean": [f32(sum(X(i, j, c) for j in range(4)) / 4) for i in range(3) for c in range(70)],
    "last": [f32(sum(X(i, j, c) for c in range(70))) for i in range(3) for j in range(4)],
}
# The input cycles through 8 values, 7 twice: columns along axis 1 tie.
want["argmax_last"] = [max(range(4), key=lambda j: (X(i, j, c), j))
                       for i in range(3) for c in range(70)]
ties = sum(len({X(i, j, c) for j in range(4)}) < 4 for i in range(3) for c in range(70))
assert ties > 0, "the input has no tie to break"
for name, w in want.items():
    _, got = npy.read(os.path.join(d, name + ".npy"))
    for k, (g, v) in enumerate(zip(got, w)):
        if g != v:
            sys.exit(f"{name}[{k}] = {g!r}, want {v!r}")
    if len(got) != len(w):
        sys.exit(f"{name}: {len(got)} values, want {len(w)}")
print("ok")
