"""What the benchmark scripts share: running one of the product's tools."""
import subprocess
import sys


def run(cmd):
    """stdout of `cmd`; exits with its stderr when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): " + " ".join(cmd) + "\n" + p.stderr)
    return p.stdout
