"""Checks the "replan" object of a dist-opt report (--dist-replan) against
itself (docs/report-format.md) and prints what the test compares: the
downtimes' ratio and whether the figures add up."""
import json
import math
import sys

r = json.load(open(sys.argv[1]))["replan"]


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


pause = r["pause_resume"]
# A pause pays the new job's start (relaunch); preparing beside hides it.
assert close(pause["downtime_s"],
             pause["drain_s"] + pause["relaunch_s"] + pause["move_s"] +
             pause["fill_s"]), pause
assert close(pause["move_s"], r["move_s"])
assert close(pause["relaunch_s"], r["relaunch"]["seconds"])
assert r["relaunch"]["given"] or r["relaunch"]["seconds"] == 0, r["relaunch"]
assert close(r["bytes_moved"], sum(t["bytes"] for t in r["transfers"]))
assert close(r["bytes_moved"],
             sum(s["received_bytes"] for s in r["stages"]))
assert close(r["bytes_moved"], sum(r["bytes_per_link_level"].values()))
# No device is busier than the move time says.
busy = {}
for t in r["transfers"]:
    for end in ("from", "to"):
        key = (end, t[end])
        busy[key] = busy.get(key, 0) + t["time_s"]
assert all(b <= r["move_s"] * (1 + 1e-9) for b in busy.values()), busy
beside = r["prepare_beside"]
rate = r["running_samples_per_s"]
gain = r["new_samples_per_s"] - rate
# A pause loses its downtime's samples; compared at the end of a slower
# move beside, it has served the new plan for the difference.
assert close(pause["samples_lost"], pause["downtime_s"] * rate)
assert close(pause["samples_lost_compared"],
             pause["samples_lost"] - gain * pause["sooner_s"])
if beside["possible"]:
    assert close(beside["downtime_s"], pause["drain_s"] + pause["fill_s"])
    assert close(beside["prepare_s"],
                 beside["relaunch_s"] + beside["move_s"]), beside
    assert close(beside["relaunch_s"], pause["relaunch_s"])
    assert beside["peak_memory_bytes"] <= beside["memory_bytes"]
    # The running plan's messages only slow the move beside them.
    assert beside["move_s"] >= r["move_s"] * (1 - 1e-12), beside
    assert close(pause["sooner_s"], beside["move_s"] - r["move_s"])
    shared = beside["contention"]
    assert shared["rule"] == "fair-share"
    slowed = shared["running_samples_per_s"] if shared["priced"] else rate
    assert slowed <= rate * (1 + 1e-12)
    slowdown = 0
    if shared["priced"]:
        # Slowed at most at the first span's rate, and at most while the
        # move runs.
        slowdown = shared["samples_lost"]
        assert shared["slowed_s"] <= beside["move_s"] * (1 + 1e-12), shared
        assert 0 <= slowdown <= (rate - slowed) * shared["slowed_s"] * (
            1 + 1e-12) + 1e-12, shared
        assert (slowdown > 0) == (shared["shared_ports"] > 0), shared
        assert close(shared["move_s"], beside["move_s"])
        assert (shared["shared_ports"] == 0) == (slowed == rate), shared
    assert close(beside["samples_lost"],
                 beside["downtime_s"] * rate + slowdown)
    chosen = beside["samples_lost"] <= pause["samples_lost_compared"]
else:
    assert pause["sooner_s"] == 0
    chosen = False
if chosen:
    assert r["strategy"] == "prepare-beside"
    assert close(r["downtime_s"], beside["downtime_s"])
    assert close(r["samples_lost"], beside["samples_lost"])
else:
    assert r["strategy"] == "pause-resume"
    assert close(r["downtime_s"], pause["downtime_s"])
    assert close(r["samples_lost"], pause["samples_lost"])
if r["worth_it"]:
    assert close(r["break_even_s"], r["samples_lost"] / gain)
else:
    assert r["break_even_s"] is None
print("replan figures add up")
if beside["possible"] and beside["downtime_s"] > 0:
    ratio = pause["downtime_s"] / beside["downtime_s"]
    print(f"pause-and-resume / prepare-beside downtime: {ratio:.1f}x")
print(f"relaunch: {r['relaunch']['seconds']:g} s, {r['relaunch']['source']}")
if beside["possible"] and beside["contention"]["priced"]:
    shared = beside["contention"]
    slower = 100 * (1 - shared["running_samples_per_s"] / rate)
    stretch = beside["move_s"] / r["move_s"] if r["move_s"] > 0 else 1
    print(f"contention: {shared['shared_ports']} shared ports, running plan "
          f"{slower:.1f}% slower while preparing, move {stretch:.2f}x")
