"""What the benchmark scripts share: running one of the product's tools."""
import os
import subprocess
import sys
import time


def run(cmd):
    """stdout of `cmd`; exits with its stderr when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): " + " ".join(cmd) + "\n" + p.stderr)
    return p.stdout


def timed(cmd, env=None):
    """Wall seconds of `cmd` and its exit status (output kept apart)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    return time.perf_counter() - t, p
