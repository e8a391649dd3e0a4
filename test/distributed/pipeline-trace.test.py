"""Prints a merged executor trace (dist-run --trace) as each rank's action
names per step, for FileCheck in pipeline-trace.test."""
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
timed = [e for e in events if e["ph"] == "X"]
rows = {}
for e in sorted(timed, key=lambda e: (e["pid"], e["ts"])):
    rows.setdefault((e["pid"], e["args"]["step"]), []).append(e["name"])
for (rank, step), names in sorted(rows.items()):
    print(f"rank {rank} step {step}: {' '.join(names)}")
ok = all(e["dur"] >= 0 and e["ts"] >= 0 for e in timed)
named = sum(1 for e in events if e["name"] == "process_name")
print(f"earliest {min(e['ts'] for e in timed):g}, every event timed: "
      f"{'yes' if ok else 'no'}, ranks named: {named}")
