"""Kills a training program mid-run and resumes it from its last periodic
checkpoint: `kill_resume.py PROGRAM EVERY KILL_AT MORE ARGS...`.

Runs PROGRAM ARGS --steps 100000000 --save-every EVERY --save-state
WORK/ckpt, kills it (SIGKILL) once it printed `step KILL_AT`, and checks
that WORK/ckpt holds a whole checkpoint of a multiple of EVERY steps (its
`step` counter). Then resumes it for MORE steps (--load-state) and runs
the same number of steps without a break; every file saved (weights,
moments, the step count in progress.json) must hold the same bits. WORK is the folder of the first ARGS output (-o WORK)."""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import npy  # noqa: E402

program, every, kill_at, more = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
args = sys.argv[5:]
work = args[args.index("-o") + 1]
ckpt = os.path.join(work, "ckpt")
job = subprocess.Popen([program] + args + ["--steps", "100000000", "--save-every",
                                           str(every), "--save-state", ckpt],
                       stdout=subprocess.PIPE, text=True)
for line in job.stdout:
    if line.startswith(f"step {kill_at} "):
        job.send_signal(signal.SIGKILL)
        break
job.wait()
if job.returncode != -signal.SIGKILL:
    sys.exit(f"the program ended ({job.returncode}) before it was killed")
_, (done,) = npy.read(os.path.join(ckpt, "step.npy"))
done = int(done)
print(f"killed after step {kill_at}; the checkpoint holds {done} steps")
if done % every or done < kill_at - every:
    sys.exit(f"the checkpoint holds {done} steps: not the last multiple of {every}")


def run(extra, out):
    p = subprocess.run([program] + args[:args.index("-o")] + ["-o", out] + extra,
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(p.stdout + p.stderr)


resumed, straight = os.path.join(work, "resumed"), os.path.join(work, "straight")
run(["--load-state", ckpt, "--steps", str(more), "--first-step", str(done + 1),
     "--save-state", resumed], work)
run(["--steps", str(done + more), "--save-state", straight], work)
for name in sorted(os.listdir(straight)):
    a = open(os.path.join(resumed, name), "rb").read()
    b = open(os.path.join(straight, name), "rb").read()
    if a != b:
        sys.exit(f"{name}: resumed from step {done} differs from {done + more} steps in one run")
print(f"resumed from step {done} for {more} steps: the same bits as {done + more} steps in one run")
