"""Compares two saved states (--save-state folders): `same_state.py A B
RTOL`. Every .npy file of A must be in B with the same shape and values
within RTOL of the larger |value| (0: bit for bit); prints how many files
and the largest difference, exits 1 on a mismatch or a missing file."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "codegen", "Inputs"))
from npy import read  # noqa: E402

a, b, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])
names = sorted(n for n in os.listdir(a) if n.endswith(".npy"))
if not names:
    sys.exit("%s holds no .npy files" % a)
worst, bad = 0.0, []
for n in names:
    other = os.path.join(b, n)
    if not os.path.exists(other):
        bad.append("%s is not in %s" % (n, b))
        continue
    (sa, va), (sb, vb) = read(os.path.join(a, n)), read(other)
    if sa != sb:
        bad.append("%s: shape %s against %s" % (n, sa, sb))
        continue
    scale = max([abs(v) for v in va] + [1e-30])
    d = max([abs(x - y) for x, y in zip(va, vb)] + [0.0]) / scale
    worst = max(worst, d)
    if d > rtol:
        bad.append("%s: relative difference %.2e" % (n, d))
print("%d files, max relative difference %.2e" % (len(names), worst))
for m in bad:
    print(m)
sys.exit(1 if bad else 0)
