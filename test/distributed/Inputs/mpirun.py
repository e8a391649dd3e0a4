"""mpirun for the lit tests: `mpirun.py -np N PROGRAM ARGS...`.

Runs Open MPI's mpirun with the flags CI needs (we run as root, on fewer
cores than ranks) and a time limit, so a hung collective fails the test
instead of the suite. Without mpirun the test fails and says what to install.
"""
import os
import shutil
import subprocess
import sys

mpirun = shutil.which("mpirun")
if not mpirun:
    sys.exit("error: mpirun not found; install openmpi-bin "
             "(scripts/install-deps.sh installs it)")
env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
cmd = [mpirun, "--allow-run-as-root", "--oversubscribe"] + sys.argv[1:]
try:
    sys.exit(subprocess.run(cmd, env=env, timeout=120).returncode)
except subprocess.TimeoutExpired:
    sys.exit("error: '%s' did not finish in 120 s (a rank is stuck in a "
             "collective?)" % " ".join(cmd))
