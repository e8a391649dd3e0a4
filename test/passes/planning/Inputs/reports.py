"""Compares two JSON reports of dist-opt (search or simulate).

    reports.py same A.json B.json     the same plan and predicted time
    reports.py slower A.json B.json   B predicts a longer iteration than A

Prints one line (SAME / SLOWER, with the figures) or exits 1 saying what
differs.
"""
import json
import sys

how, a_path, b_path = sys.argv[1:4]
a, b = (json.load(open(p)) for p in (a_path, b_path))
plan_keys = ("spec", "dp", "tp", "pp", "mbs", "num_microbatches",
             "global_batch", "schedule", "chunks", "recompute", "zero")
ta = a["estimate"]["iteration_time_s"]
tb = b["estimate"]["iteration_time_s"]
if how == "same":
    for k in plan_keys:
        if a["plan"].get(k) != b["plan"].get(k):
            sys.exit(f"plan field {k}: {a['plan'].get(k)!r} vs {b['plan'].get(k)!r}")
    stages_a = [s["layers"] for s in a["plan"]["stages"]]
    stages_b = [s["layers"] for s in b["plan"]["stages"]]
    if stages_a != stages_b:
        sys.exit(f"stage layers {stages_a} vs {stages_b}")
    for k, v in a["estimate"].items():
        if k in b["estimate"] and b["estimate"][k] != v:
            sys.exit(f"estimate {k}: {v!r} vs {b['estimate'][k]!r}")
    print(f"SAME {a['plan']['spec']} {ta}")
elif how == "slower":
    if a["plan"]["spec"] != b["plan"]["spec"]:
        sys.exit(f"different plans: {a['plan']['spec']} vs {b['plan']['spec']}")
    if not tb > ta:
        sys.exit(f"expected {b_path} slower: {tb} vs {ta}")
    print(f"SLOWER {ta} < {tb}")
else:
    sys.exit("usage: reports.py same|slower A.json B.json")
