"""Minimal .npy writer/reader for lit tests (no numpy needed).

    npy.py write FILE f4|i8 1x8 v0 v1 ...   (fewer values repeat cyclically)
    npy.py print FILE                         prints dtype, shape and values
    npy.py close A B RTOL                     same shape, values within RTOL
                                              of the larger |value| (exit 1)
    npy.py delta BEFORE AFTER NAME...         per NAME, NAME's values in
                                              BEFORE/ minus those in AFTER/
                                              (an SGD step with lr 1: dL/dw)
    npy.py hostile FILE KIND                  a .npy with a lying header:
        bigshape   shape (1000000000, 8), 64 data bytes
        hugeheader format 2.0 header length 0xFFFFFFFF, 20 bytes in all
        negdim     shape (-5, 8)
        overflow   shape (4294967296, 4294967296, 8)
"""
import ast
import struct
import sys

FMT = {"f4": ("<f4", "f"), "f8": ("<f8", "d"), "i8": ("<i8", "q"),
       "i4": ("<i4", "i"), "b1": ("|b1", "?")}


def write(path, dt, shape, values):
    descr, code = FMT[dt]
    dims = [int(d) for d in shape.split("x")] if shape else []
    n = 1
    for d in dims:
        n *= d
    vals = [float(v) if code in "fd" else int(v) for v in values] or [0]
    data = [vals[i % len(vals)] for i in range(n)]
    shp = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shp)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode())
        f.write(struct.pack("<%d%s" % (n, code), *data))


def load(path):
    """(descr, shape, flat values) of an .npy file."""
    with open(path, "rb") as f:
        raw = f.read()
    hlen = struct.unpack("<H", raw[8:10])[0]
    header = ast.literal_eval(raw[10:10 + hlen].decode())
    code = {v[0]: v[1] for v in FMT.values()}[header["descr"]]
    n = 1
    for d in header["shape"]:
        n *= d
    vals = struct.unpack("<%d%s" % (n, code), raw[10 + hlen:])
    return header["descr"], list(header["shape"]), list(vals)


def read(path):
    _, shape, vals = load(path)
    return shape, vals


def show(path):
    descr, shape, vals = load(path)
    code = {v[0]: v[1] for v in FMT.values()}[descr]
    print("dtype", descr, "shape", shape)
    print(" ".join(("%.6g" % v) if code in "fd" else str(int(v)) for v in vals))


def check_mlp(weights, xpath, ypath):
    """relu(x @ w1 + b1) @ w2 in plain Python against the program's y."""
    with open(weights, "rb") as f:
        raw = f.read()
    w1 = struct.unpack("<128f", raw[0:512])
    b1 = struct.unpack("<16f", raw[512:576])
    w2 = struct.unpack("<64f", raw[576:832])
    (rows, _), x = read(xpath)
    _, y = read(ypath)
    worst = 0.0
    for r in range(rows):
        h = [max(0.0, sum(x[r * 8 + k] * w1[k * 16 + j] for k in range(8)) + b1[j])
             for j in range(16)]
        for j in range(4):
            want = sum(h[k] * w2[k * 4 + j] for k in range(16))
            worst = max(worst, abs(want - y[r * 4 + j]) / (1e-6 + abs(want)))
    print("max relative error %.2e" % worst)
    sys.exit(0 if worst < 1e-4 else 1)


def close(a, b, rtol):
    (sa, va), (sb, vb) = read(a), read(b)
    if sa != sb:
        print("shapes differ: %s and %s" % (sa, sb))
        sys.exit(1)
    scale = max([abs(v) for v in va] + [1e-30])
    worst = max([abs(x - y) for x, y in zip(va, vb)] + [0.0]) / scale
    print("max relative difference %.2e" % worst)
    sys.exit(0 if worst <= float(rtol) else 1)


def delta(before, after, names):
    for name in names:
        _, w0 = read("%s/%s.npy" % (before, name))
        _, w1 = read("%s/%s.npy" % (after, name))
        print(name, " ".join("%.5g" % (a - b) for a, b in zip(w0, w1)))


def hostile(path, kind):
    def v1(shape, data):
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }\n" % shape
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data
    blob = {"bigshape": lambda: v1("(1000000000, 8)", bytes(64)),
            "hugeheader": lambda: b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFFF) + bytes(8),
            "negdim": lambda: v1("(-5, 8)", bytes(64)),
            "overflow": lambda: v1("(4294967296, 4294967296, 8)", bytes(64))}[kind]()
    with open(path, "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    if sys.argv[1] == "hostile":
        hostile(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif sys.argv[1] == "print":
        show(sys.argv[2])
    elif sys.argv[1] == "close":
        close(*sys.argv[2:5])
    elif sys.argv[1] == "delta":
        delta(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1] == "check-mlp":
        check_mlp(*sys.argv[2:5])
