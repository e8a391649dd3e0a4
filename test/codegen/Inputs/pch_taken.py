"""Whether GCC takes the precompiled runtime header, for
precompiled-header.test.

    pch_taken.py LOG

LOG holds `dist-compile -v`'s stderr. Its compiler command (the line that
compiles the generated source) is rerun syntax-only with -H, which lists
each header read: a precompiled header GCC uses as "! PATH.gch", one it
rejects as "x PATH.gch". Prints "TAKEN PATH" or "NOT TAKEN: ..." and exits
non-zero unless taken.
"""
import shlex
import subprocess
import sys

lines = [l for l in open(sys.argv[1]).read().splitlines()
         if "-fopenmp" in l and ".cpp" in l and "-o " in l]
if not lines:
    sys.exit("NOT TAKEN: no compiler command in " + sys.argv[1])
args = shlex.split(lines[-1])
# The source and the include folders and flags; not the libraries, not -o.
source = next(a for a in args if a.endswith(".cpp"))
keep = [a for a in args[1:args.index(source)] if a != "-w"]
cmd = [args[0]] + keep + ["-H", "-fsyntax-only", "-Winvalid-pch", source]
p = subprocess.run(cmd, capture_output=True, text=True)
if p.returncode != 0:
    sys.exit("NOT TAKEN: the compile failed:\n" + p.stderr[-2000:])
for line in p.stderr.splitlines():
    if line.startswith("! ") and line.endswith(".gch"):
        print("TAKEN " + line[2:])
        sys.exit(0)
sys.exit("NOT TAKEN:\n" + "\n".join(p.stderr.splitlines()[:5]))
