"""Moves rank 0's first backward (and its gradient receive) after its next
two forwards in a materialized 1F1B schedule: still valid, but the stage
holds more activations and the backward starts later.

    late_backward.py IN.mlir OUT.mlir
"""
import re
import sys

text = open(sys.argv[1]).read()
start = text.index("dist.actions 0 ")
end = text.index("}", start)
lines = text[start:end].split("\n")
recv = next(i for i, l in enumerate(lines) if "dist.recv_grad microbatch 0 " in l)
moved = lines[recv:recv + 2]
assert "dist.backward" in moved[1], moved
rest = lines[:recv] + lines[recv + 2:]
# After the next two forwards and their sends.
seen, at = 0, recv
while seen < 2:
    if "dist.send_activation" in rest[at]:
        seen += 1
    at += 1
rest[at:at] = moved
open(sys.argv[2], "w").write(text[:start] + "\n".join(rest) + text[end:])
