"""Stops one rank of an MPI job mid-run (SIGSTOP), as a peer that stops
answering would: `stop_rank.py RANK DELAY -np N PROGRAM ARGS...`.

Starts the job like mpirun.py, waits until the job has printed its first
training step (`step 1 ...`: every rank is past start-up, so the stop
lands mid-run and not in MPI_Init, which no timeout bounds) and DELAY
seconds more, stops rank RANK, and waits for the job to end (at most 90 s).
The other ranks must notice (the runtime's transfer timeout) and end the
job; the exit status is mpirun's. A job that does not end fails the test.
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

rank, delay = sys.argv[1], float(sys.argv[2])
mpirun = shutil.which("mpirun")
if not mpirun:
    sys.exit("error: mpirun not found; install openmpi-bin "
             "(scripts/install-deps.sh installs it)")
env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
program = os.path.realpath(sys.argv[5])
cmd = [mpirun, "--allow-run-as-root", "--oversubscribe"] + sys.argv[3:]
job = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
stepped = threading.Event()


def relay():
    """Passes the job's output on and notes its first step line."""
    for line in job.stdout:
        if line.startswith("step "):
            stepped.set()
        sys.stdout.write(line)
        sys.stdout.flush()
    stepped.set()


threading.Thread(target=relay, daemon=True).start()


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
if not stepped.wait(timeout=60):
    job.kill()
    sys.exit(f"error: {program} printed no training step within 60 s")
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
