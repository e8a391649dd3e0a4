#!/usr/bin/env python3
"""How a generated CPU program degrades when another process holds a core.

Compiles the GPT-2 fixture for inference once and runs it with
`--threads 2 --repeat R --time` under libgomp wait policies, on an idle
machine and with one busy core (a spinning process pinned to CPU 0):

  spin-300000   libgomp's default when nothing is set (DG_WAIT_POLICY_SET=1
                keeps the program from choosing)
  spin-10000    GOMP_SPINCOUNT=10000, bounded spinning
  spin-1000     GOMP_SPINCOUNT=1000, a few microseconds of spinning
  passive       OMP_WAIT_POLICY=passive
  program       what the program chooses as it starts (distrt/gen/Threads.h):
                libgomp's default when its team has idle cores, else passive

Prints mean and min ms per run (the program's own --time, weights loaded
once, the first run left out) and each busy/idle ratio. All figures come
from one run of this script, alternating the policies, so that the noise
of a shared machine hits them alike.

    /usr/bin/python3 bench/codegen/bench_wait_policy.py --build build --repeat 40
"""
import argparse
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICIES = {
    "spin-300000": {"DG_WAIT_POLICY_SET": "1"},
    "spin-10000": {"GOMP_SPINCOUNT": "10000"},
    "spin-1000": {"GOMP_SPINCOUNT": "1000"},
    "passive": {"OMP_WAIT_POLICY": "passive"},
    "program": {},
}


def run(exe, ids, repeat, env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "DG_WAIT_POLICY_SET")}
    e.update(env)
    out = subprocess.run([exe, f"input_ids={ids}", "--threads", "2", "--repeat",
                          str(repeat), "--time", "-o", os.path.dirname(ids)],
                         capture_output=True, text=True, env=e, check=True).stdout
    m = re.search(r"mean ([0-9.]+) ms, min ([0-9.]+) ms", out)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-wait-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # however it ends
    exe = os.path.join(work, "gpt2.bin")
    subprocess.run([os.path.join(args.build, "bin", "dist-compile"),
                    os.path.join(ROOT, "test", "fixtures", "gpt2.onnx"), "-o", exe],
                   check=True)
    ids = os.path.join(work, "ids.npy")
    # .npy int64 [1, 32] without numpy: header + little-endian ids.
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 32), }"
    header += " " * (118 - len(header)) + "\n"
    with open(ids, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
                header.encode())
        f.write(b"".join(((i * 37) % 512).to_bytes(8, "little") for i in range(32)))
    results = {(p, b): [] for p in POLICIES for b in (False, True)}
    for _ in range(args.rounds):
        for busy in (False, True):
            hog = (subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c",
                                     "while True: pass"]) if busy else None)
            try:
                for name, env in POLICIES.items():
                    results[(name, busy)].append(run(exe, ids, args.repeat, env))
            finally:
                if hog:
                    hog.kill()
                    hog.wait()
    print(f"GPT-2 fixture, batch 1 x 32 tokens, --threads 2, {args.repeat} runs "
          f"x {args.rounds} rounds (best round's mean / min ms per run)")
    print(f"{'policy':<12} {'idle mean':>10} {'idle min':>9} {'busy mean':>10} "
          f"{'busy min':>9} {'busy/idle (mean)':>17}")
    for name in POLICIES:
        idle = min(results[(name, False)])
        busy = min(results[(name, True)])
        print(f"{name:<12} {idle[0]:>10.2f} {idle[1]:>9.2f} {busy[0]:>10.2f} "
              f"{busy[1]:>9.2f} {busy[0] / idle[0]:>17.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
