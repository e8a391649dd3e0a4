"""Runs a generated CUDA program; where no GPU is visible the program must
say so (exit 3, "no CUDA device") and the run is reported as skipped.

    run_cuda.py PROGRAM ARGS...
"""
import subprocess
import sys

p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
if p.returncode == 3 and "CUDA" in p.stderr:
    print("SKIPPED (no GPU): " + p.stderr.strip())
    sys.exit(0)
sys.stdout.write(p.stdout)
sys.stderr.write(p.stderr)
print("RAN ON GPU" if p.returncode == 0 else "FAILED")
sys.exit(p.returncode)
