"""Kills a training program mid-run and resumes it from its last periodic
checkpoint: `kill_resume.py PROGRAM EVERY KILL_AT MORE [--while-saving] ARGS...`.

Runs PROGRAM ARGS --steps 100000000 --save-every EVERY --save-state
WORK/ckpt and kills it (SIGKILL): once it printed `step KILL_AT`, or with
--while-saving in its checkpoint after step KILL_AT once that counts and
its first file moved in (DISTRT_FAULT=kill-saving). Checks that WORK/ckpt
holds a whole checkpoint of a multiple of EVERY steps (progress.json; a
file still in WORK/ckpt.commit is newer than WORK/ckpt's, as the programs
read it). Then resumes it for MORE steps (--load-state) twice, into a new
folder and into WORK/ckpt itself, and runs the same number of steps
without a break; every file saved (weights, moments, the step count in
progress.json) must hold the same bits. WORK is the folder of the first
ARGS output (-o WORK)."""
import json
import os
import signal
import subprocess
import sys

program, every, kill_at, more = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
args = sys.argv[5:]
while_saving = "--while-saving" in args
if while_saving:
    args.remove("--while-saving")
work = args[args.index("-o") + 1]
ckpt = os.path.join(work, "ckpt")
env = dict(os.environ)
if while_saving:
    env["DISTRT_FAULT"] = f"kill-saving:0:{kill_at}"
job = subprocess.Popen([program] + args + ["--steps", "100000000", "--save-every",
                                           str(every), "--save-state", ckpt],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
for line in job.stdout:
    if not while_saving and line.startswith(f"step {kill_at} "):
        job.send_signal(signal.SIGKILL)
        break
job.wait()
if job.returncode != -signal.SIGKILL:
    sys.exit(f"the program ended ({job.returncode}) before it was killed")


def checkpoint_file(name):
    moving = os.path.join(ckpt + ".commit", name)
    return moving if os.path.exists(moving) else os.path.join(ckpt, name)


with open(checkpoint_file("progress.json")) as f:
    done = json.load(f)["steps"]
torn = os.path.isdir(ckpt + ".commit")
print(f"killed after step {kill_at}{' while saving' if torn else ''}; "
      f"the checkpoint holds {done} steps")
if done % every or done < kill_at - every or (while_saving and done != kill_at):
    sys.exit(f"the checkpoint holds {done} steps: not the last multiple of {every}")


def run(extra, out):
    p = subprocess.run([program] + args[:args.index("-o")] + ["-o", out] + extra,
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(p.stdout + p.stderr)


def same(a_dir, b_dir, what):
    for name in sorted(os.listdir(b_dir)):
        a = open(os.path.join(a_dir, name), "rb").read()
        b = open(os.path.join(b_dir, name), "rb").read()
        if a != b:
            sys.exit(f"{name}: {what} differs from {done + more} steps in one run")


resumed, straight = os.path.join(work, "resumed"), os.path.join(work, "straight")
resume = ["--load-state", ckpt, "--steps", str(more), "--first-step", str(done + 1)]
run(resume + ["--save-state", resumed], work)
run(["--steps", str(done + more), "--save-state", straight], work)
same(resumed, straight, f"resumed from step {done}")
# Saving into the folder it resumed from: the save finishes the move first.
run(resume + ["--save-state", ckpt], work)
if os.path.exists(ckpt + ".commit") or os.path.exists(ckpt + ".partial"):
    sys.exit("the save into the checkpoint's own folder left "
             f"{ckpt}.commit or {ckpt}.partial behind")
same(ckpt, straight, f"resumed from step {done} into its own folder")
print(f"resumed from step {done} for {more} steps: the same bits as {done + more} steps in one run")
