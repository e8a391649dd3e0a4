#!/usr/bin/python3
"""NEUKONFIG (re-partitioning with minimal service downtime) through the
product path: an inference plan searched on healthy edge boards, the
network link's bandwidth dropped, and `dist-opt --dist-replan` planning the
new partition and the migration to it.

`dist-modelgen` writes a GPT as graph-only ONNX; `dist-opt --print-cluster`
gives the preset as YAML, whose network `bandwidth_GBps` each row replaces;
`dist-opt --dist-mode=infer --dist-search --dist-report=running.json` plans
the healthy cluster, and the same command on the changed cluster with
`--dist-replan=running.json` reports the migration (docs/resilience.md,
"Re-planning"). Every figure is a prediction of the cost model and the
migration model, not a measurement.

    /usr/bin/python3 bench/resilience/neukonfig.py --build build
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchutil import run  # noqa: E402

# (preset, its network's changed bandwidth in GB/s, global batch)
ROWS = (
    ("arm-board-wifi", 0.0025, 8),
    ("arm-board-wifi", 0.00125, 8),
    ("arm-board-wifi", 0.00025, 8),
    ("arm-board-wifi", 0.000125, 8),
    ("arm-board-wifi", 0.000125, 4),
    ("arm-board-wifi", 0.000125, 2),
    ("arm-board-ethernet", 0.0125, 8),
    ("arm-board-ethernet", 0.00125, 8),
)
NETWORK = r"(network: \{[^}]*bandwidth_GBps: )([0-9.e+-]+)"


def mbps(gbps):
    return f"{gbps * 8000:g} Mb/s"


def short(spec):
    keep = ("dp", "tp", "pp", "mbs", "stages")
    parts = dict(p.split("=", 1) for p in spec.split(","))
    return " ".join(f"{k}={parts[k]}" for k in keep if k in parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--layers", type=int, default=40)
    ap.add_argument("--hidden", type=int, default=2560)
    ap.add_argument("--heads", type=int, default=20)
    ap.add_argument("--seq", type=int, default=256)
    args = ap.parse_args()
    opt = os.path.join(args.build, "bin", "dist-opt")
    gen = os.path.join(args.build, "bin", "dist-modelgen")
    tmp = tempfile.mkdtemp(prefix="neukonfig-")
    model = os.path.join(tmp, "gpt.onnx")
    gen_cmd = [gen, "gpt", "--layers", str(args.layers), "--hidden",
               str(args.hidden), "--heads", str(args.heads), "--seq",
               str(args.seq), "--vocab", "32000", "-o", model]
    run(gen_cmd)
    print("model: `dist-modelgen " + " ".join(gen_cmd[1:-2]) +
          " -o gpt.onnx`\n")
    print("| # | cluster | network | batch | running plan | new plan | "
          "samples/s running -> new | moved MB | move s | pause-and-resume "
          "s | prepare-beside s | factor | beside peak / memory GB | "
          "beside: running samples/s, move s | samples lost beside / pause "
          "| verdict |")
    print("|" + "---|" * 16)
    commands = []
    for i, (preset, changed, batch) in enumerate(ROWS, 1):
        yaml = run([opt, "--print-cluster", f"--dist-cluster={preset}:4"])
        healthy = float(re.search(NETWORK, yaml).group(2))
        new_yaml = os.path.join(tmp, f"{i}-changed.yaml")
        with open(new_yaml, "w") as f:
            f.write(re.sub(NETWORK, rf"\g<1>{changed}", yaml))
        running = os.path.join(tmp, f"{i}-running.json")
        report = os.path.join(tmp, f"{i}-replan.json")
        common = [opt, model, "--dist-weights=ignore", "--dist-mode=infer",
                  "--dist-search", f"--dist-batch={batch}"]
        first = common + [f"--dist-cluster={preset}:4",
                          f"--dist-report={running}", "-o", "/dev/null"]
        second = common + [f"--dist-cluster={new_yaml}",
                           f"--dist-replan={running}",
                           f"--dist-report={report}", "-o", "/dev/null"]
        run(first)
        run(second)
        commands.append((preset, changed, first, second))
        r = json.load(open(report))["replan"]
        pause = r["pause_resume"]["downtime_s"]
        beside = r["prepare_beside"]
        lost_pause = r["pause_resume"]["samples_lost_compared"]
        if beside["possible"]:
            bd = f"{beside['downtime_s']:.0f}"
            factor = f"{pause / beside['downtime_s']:.1f}x"
            peak = (f"{beside['peak_memory_bytes'] / 1e9:.2f} / "
                    f"{beside['memory_bytes'] / 1e9:.1f}")
            shared = beside["contention"]
            slowed = (f"{shared['running_samples_per_s']:.4f}, "
                      f"{beside['move_s']:.0f}")
            lost = f"{beside['samples_lost']:.1f} / {lost_pause:.1f}"
        else:
            bd, factor, peak = "not possible", "-", beside["problem"]
            slowed, lost = "-", f"- / {lost_pause:.1f}"
        strategy = ("prepare beside" if r["strategy"] == "prepare-beside"
                    else "pause and resume")
        if r["same_plan"]:
            verdict = "keep (same plan)"
        elif r["worth_it"]:
            verdict = (f"re-plan ({strategy}), pays after "
                       f"{r['break_even_s'] / 3600:.2f} h")
        else:
            verdict = "keep (new plan not faster)"
        print(f"| {i} | {preset}:4 | {mbps(healthy)} -> {mbps(changed)} | "
              f"{batch} | {short(r['running_plan'])} | "
              f"{short(r['new_plan'])} | "
              f"{r['running_samples_per_s']:.4f} -> "
              f"{r['new_samples_per_s']:.4f} | {r['bytes_moved'] / 1e6:.0f} | "
              f"{r['move_s']:.0f} | {pause:.0f} | {bd} | {factor} | {peak} | "
              f"{slowed} | {lost} | {verdict} |")
    print("\nCommands (in a fresh folder; gpt.onnx from the dist-modelgen "
          "line above; N-changed.yaml is the preset from dist-opt "
          "--print-cluster with the network's bandwidth_GBps replaced):\n")

    def show(cmd):
        return " ".join(["dist-opt"] + [c.replace(tmp + "/", "")
                                        for c in cmd[1:]])
    for i, (preset, changed, first, second) in enumerate(commands, 1):
        print(f"{i}. `dist-opt --print-cluster --dist-cluster={preset}:4 | "
              f"sed '/^network/s/bandwidth_GBps: [0-9.]*/bandwidth_GBps: "
              f"{changed}/' > {i}-changed.yaml`; `{show(first)}`; "
              f"`{show(second)}`")


if __name__ == "__main__":
    main()
