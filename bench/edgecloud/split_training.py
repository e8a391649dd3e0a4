#!/usr/bin/python3
"""Edge-cloud split training (split learning) through the product path: a
phone keeps the raw input and the first layers, a cloud A100 trains the
rest; the search chooses the split point and the micro-batching per link.

`dist-modelgen vgg16 --image 32 --classes 10` writes VGG16 for CIFAR-10
(graph-only ONNX, f32); `dist-opt --print-cluster
--dist-cluster=edge-cloud-wifi` gives the phone + A100 preset as YAML,
whose `network:` line each row replaces with its WAN (the Wi-Fi and LTE
rows are the presets' own figures); `dist-opt --dist-search=pin=0-0@phone-soc
--dist-report` plans each row. Two references per row, from the same
simulator: the searched plan with its split forced right after the
pinned layer (`--dist-plan` with `stages=1`), and the cloud GPU alone
(the YAML with the cloud's node group alone, `--dist-search`) plus the
upload of the raw input over the row's link, which this script adds as
latency + batch x input bytes / bandwidth (the simulator has no input
upload). Every figure is a prediction, not a measurement.

    /usr/bin/python3 bench/edgecloud/split_training.py --build build
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

# (label, WAN bandwidth GB/s, one-way latency us); the last two are the
# edge-cloud-wifi and edge-cloud-lte presets' links.
LINKS = (
    ("10 Gb/s, 1 ms (edge server on a LAN)", 1.25, 1000),
    ("1 Gb/s, 5 ms (fibre)", 0.125, 5000),
    ("Wi-Fi 50 Mb/s, 20 ms (edge-cloud-wifi)", 0.00625, 20000),
    ("LTE 10 Mb/s, 50 ms (edge-cloud-lte)", 0.00125, 50000),
)
INPUT_BYTES = 3 * 32 * 32 * 4  # one CIFAR image, f32


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    opt = os.path.join(args.build, "bin", "dist-opt")
    gen = os.path.join(args.build, "bin", "dist-modelgen")
    work = tempfile.mkdtemp(prefix="edgecloud-")
    model = os.path.join(work, "vgg16.onnx")
    run([gen, "vgg16", "--image", "32", "--classes", "10", "-o", model])
    base = [opt, model, "--dist-weights=ignore", "--dist-dtype=f32",
            f"--dist-batch={args.batch}", "-o", os.path.join(work, "out.mlir")]
    preset = run([opt, "--dist-cluster=edge-cloud-wifi", "--print-cluster"])
    # The boundary tensor of every layer, per sample (f32).
    names = re.findall(r"^  (layer\d+) ", run(base + ["--dist-print-model"]),
                       re.M)
    print(f"VGG16 (CIFAR-10, {len(names)} layers), f32, global batch "
          f"{args.batch}, phone (phone-soc) + cloud A100 (a100-80gb), "
          f"--dist-search=pin=0-0@phone-soc\n")
    print("| link | searched plan (prediction) | phone runs layers | crosses "
          "after (per sample) | step s | MiB over the link per step | phone "
          "peak memory MiB | split forced after layer 0: step s | cloud "
          "alone + input upload: step s | what the pin costs s (x) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, gbps, lat in LINKS:
        net = (f'network: {{name: "wan", bandwidth_GBps: {gbps}, '
               f'latency_us: {lat}, collective_efficiency: 0.7}}')
        text = re.sub(r"^network: .*$", net, preset, flags=re.M)
        yaml = os.path.join(work, f"link-{gbps}.yaml")
        with open(yaml, "w") as f:
            f.write(text)
        rep = os.path.join(work, "r.json")
        run(base + [f"--dist-cluster={yaml}",
                    "--dist-search=pin=0-0@phone-soc", "--dist-report=" + rep])
        with open(rep) as f:
            r = json.load(f)
        side = r["pinned"][0]
        plan = r["plan"]
        label_plan = (f"pp={plan['pp']} mbs={plan['mbs']} "
                      f"{plan['schedule']}"
                      + (f"x{plan['chunks']}" if plan["chunks"] > 1 else ""))
        last = side["layers"][-1][1]
        # One crossing: each sample's activation up, its gradient back.
        kib = side["link_bytes_per_iteration"] / (2 * args.batch * 1024)
        crossing = (f"layer {last} ({kib:g} KiB)"
                    if len(side["layers"]) == 1 else "several")
        step = r["estimate"]["iteration_time_s"]
        # The same plan with its split right after layer 0.
        forced = simulate(base, yaml, forced_split(plan["spec"]), work)
        # The cloud GPU alone: the YAML without the phone's node group.
        cloud_yaml = os.path.join(work, f"cloud-{gbps}.yaml")
        with open(cloud_yaml, "w") as f:
            f.write(cloud_only(text))
        run(base + [f"--dist-cluster={cloud_yaml}", "--dist-search",
                    "--dist-report=" + rep])
        with open(rep) as f:
            cloud = json.load(f)["estimate"]["iteration_time_s"]
        cloud += lat * 1e-6 + args.batch * INPUT_BYTES / (gbps * 1e9)
        print(f"| {label} | {label_plan} | {ranges(side['layers'])} | "
              f"{crossing} | {step:.3f} | "
              f"{side['link_bytes_per_iteration'] / 2**20:.1f} | "
              f"{side['peak_memory_bytes'] / 2**20:.0f} | {forced:.3f} | "
              f"{cloud:.3f} | +{step - cloud:.3f} ({step / cloud:.1f}x) |")


def ranges(rs):
    return ", ".join(f"{a}-{b}" for a, b in rs)


def forced_split(spec):
    """`spec` (--dist-plan syntax) with its first stage ending after layer
    0."""
    m = re.search(r"stages=([0-9/]+)", spec)
    cuts = [int(c) for c in m.group(1).split("/")]
    cuts[0] = 1
    for i in range(1, len(cuts)):
        cuts[i] = max(cuts[i], cuts[i - 1] + 1)
    return spec.replace(m.group(0), "stages=" + "/".join(map(str, cuts)))


def simulate(base, yaml, spec, work):
    rep = os.path.join(work, "forced.json")
    run(base + [f"--dist-cluster={yaml}", "--dist-plan=" + spec,
                "--dist-simulate", "--dist-report=" + rep])
    with open(rep) as f:
        return json.load(f)["estimate"]["iteration_time_s"]


def cloud_only(text):
    """The cluster YAML with its phone node group removed."""
    lines, out, skip = text.splitlines(), [], False
    for line in lines:
        if line.startswith("  - device: \"phone-soc\""):
            skip = True
            continue
        if skip and line.startswith("    "):
            continue
        skip = False
        out.append(line)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
