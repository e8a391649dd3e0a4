"""Checks for test/distributed/dist-profile.test (no numpy needed).

    profile_check.py scale IN.json OUT.json FACTOR [TP]
        every time x FACTOR (with TP: only the entries of that tp; the
        optimizer's time is left alone)
    profile_check.py ratio A.json B.json LOW HIGH    B's predicted iteration
        time over A's must lie in [LOW, HIGH]; prints both
"""
import json
import sys


def main():
    cmd = sys.argv[1]
    if cmd == "scale":
        db = json.load(open(sys.argv[2]))
        k = float(sys.argv[4])
        tp = int(sys.argv[5]) if len(sys.argv) > 5 else None
        for e in db["entries"]:
            if tp is not None and e["tp"] != tp:
                continue
            for key in ("fwd_s", "bwd_input_s", "bwd_weight_s"):
                if key in e:
                    e[key] *= k
        for o in db.get("optimizer", []) if tp is None else []:
            o["seconds_per_parameter"] *= k
        json.dump(db, open(sys.argv[3], "w"))
    elif cmd == "ratio":
        a = json.load(open(sys.argv[2]))["estimate"]["iteration_time_s"]
        b = json.load(open(sys.argv[3]))["estimate"]["iteration_time_s"]
        lo, hi = float(sys.argv[4]), float(sys.argv[5])
        r = b / a
        print("ratio %s" % ("ok" if lo <= r <= hi else "%.4g outside [%g, %g]" % (r, lo, hi)))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
