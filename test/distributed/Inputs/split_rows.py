"""Splits a .npy file into N equal blocks of rows (dim 0), for lit tests.

    split_rows.py FILE.npy N PREFIX    writes PREFIX0.npy ... PREFIX{N-1}.npy

No numpy needed: the header is copied with dim 0 divided by N.
"""
import ast
import struct
import sys

path, n, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
raw = open(path, "rb").read()
major = raw[6]
hsize = 2 if major == 1 else 4
hlen = struct.unpack("<H" if hsize == 2 else "<I", raw[8:8 + hsize])[0]
start = 8 + hsize + hlen
header = ast.literal_eval(raw[8 + hsize:start].decode("latin1"))
shape = list(header["shape"])
if not shape or shape[0] % n:
    sys.exit(f"error: {path}: dim 0 of {shape} does not split into {n} blocks")
data = raw[start:]
block = len(data) // n
shape[0] //= n
# The header as dist-compile's programs and npy.py write it, so that `cmp`
# compares whole files.
shp = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
text = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
    header["descr"], header["fortran_order"], shp)
text += " " * ((64 - (10 + len(text) + 1) % 64) % 64) + "\n"
for k in range(n):
    with open(f"{prefix}{k}.npy", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)))
        f.write(text.encode("latin1"))
        f.write(data[k * block:(k + 1) * block])
