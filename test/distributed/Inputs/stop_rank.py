"""Stops one rank of an MPI job mid-run (SIGSTOP), as a peer that stops
answering would: `stop_rank.py RANK DELAY -np N PROGRAM ARGS...`.

Starts the job like mpirun.py, waits until rank RANK's process has run for
DELAY seconds, stops it, and waits for the job to end (at most 90 s). The
other ranks must notice (the runtime's transfer timeout) and end the job;
the exit status is mpirun's. A job that does not end fails the test.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

rank, delay = sys.argv[1], float(sys.argv[2])
mpirun = shutil.which("mpirun")
if not mpirun:
    sys.exit("error: mpirun not found; install openmpi-bin "
             "(scripts/install-deps.sh installs it)")
env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
program = os.path.realpath(sys.argv[5])
cmd = [mpirun, "--allow-run-as-root", "--oversubscribe"] + sys.argv[3:]
job = subprocess.Popen(cmd, env=env)


def find_rank():
    """The pid of the job's process of rank `rank`, or None."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{pid}/exe") != program:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


pid, start = None, time.time()
while pid is None and job.poll() is None and time.time() - start < 30:
    pid = find_rank()
    time.sleep(0.05)
if pid is None:
    job.kill()
    sys.exit(f"error: rank {rank} of {program} never started")
time.sleep(delay)
os.kill(pid, signal.SIGSTOP)
print(f"stop_rank.py: stopped rank {rank}", file=sys.stderr, flush=True)
try:
    code = job.wait(timeout=90)
except subprocess.TimeoutExpired:
    job.kill()
    code = "hung"
try:  # let a stopped process that survived the job go
    os.kill(pid, signal.SIGKILL)
except OSError:
    pass
if code == "hung":
    sys.exit("error: the job did not end within 90 s of a stopped rank")
sys.exit(code)
