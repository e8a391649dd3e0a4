#!/usr/bin/env python3
"""Checks a --dist-export file against the trainer's own option list.

    trainer_config.py megatron FILE     flags in DISTOPT_PARALLEL_ARGS
    trainer_config.py torchtitan FILE   [section] keys of the TOML
    trainer_config.py deepspeed FILE    dotted JSON keys

Every emitted option must be one the trainer's pinned version defines
(test/fixtures/trainers/*.txt, read from each project's source). Beyond the
names it checks what each trainer asserts when it starts: Megatron-LM's
pipeline layout (embedding first, loss last, as many 't' as --num-layers,
a multiple of the pipeline size of stages), torchtitan's schedule name
(torch.distributed.pipelining) and module lists, DeepSpeed's batch identity
train_batch_size = micro x accumulation x data-parallel size. Prints one
line per problem and exits 1, or "ok: N options" and exits 0.
"""
import json
import os
import re
import shlex
import sys
import tomllib

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "fixtures", "trainers")


def listed(name, column=0):
    out = set()
    with open(os.path.join(FIXTURES, name)) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                out.add(line.split()[column])
    return out


def megatron(path):
    text = open(path).read()
    m = re.search(r"^DISTOPT_PARALLEL_ARGS=\((.*?)^\)", text, re.S | re.M)
    if not m:
        return ["no DISTOPT_PARALLEL_ARGS=( ... ) array"], 0
    words = shlex.split(m.group(1))
    known = listed("megatron-args.txt")
    problems, flags, i = [], {}, 0
    while i < len(words):
        w = words[i]
        if not w.startswith("--"):
            problems.append(f"stray word {w!r}")
            i += 1
            continue
        value = None
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            i += 1
        flags[w] = value
        if w not in known:
            problems.append(f"{w} is not a Megatron-LM flag")
        i += 1
    layout = flags.get("--pipeline-model-parallel-layout")
    if layout is not None:
        stages = layout.split("|")
        flat = "".join(stages)
        pp = int(flags.get("--pipeline-model-parallel-size", "1"))
        if not flat.startswith("E") or not flat.endswith("L"):
            problems.append(f"layout {layout!r}: embedding first, loss last")
        if flat.count("E") != 1 or flat.count("L") != 1:
            problems.append(f"layout {layout!r}: one E and one L")
        if set(flat) - set("EtL"):
            problems.append(f"layout {layout!r}: unknown layer letters")
        if flat.count("t") != int(flags.get("--num-layers", "-1")):
            problems.append(f"layout {layout!r} does not place --num-layers")
        if len(stages) % pp:
            problems.append(f"layout {layout!r}: {len(stages)} stages, pp={pp}")
    for choice, allowed in [("--recompute-granularity", {"full", "selective"}),
                            ("--recompute-method", {"uniform", "block"}),
                            ("--fp8-format", {"e4m3", "hybrid"}),
                            ("--attention-backend",
                             {"flash", "fused", "unfused", "local", "auto"}),
                            ("--data-parallel-sharding-strategy",
                             {"no_shard", "optim", "optim_grads",
                              "optim_grads_params"})]:
        if choice in flags and flags[choice] not in allowed:
            problems.append(f"{choice} {flags[choice]} not in {sorted(allowed)}")
    return problems, len(flags)


def torchtitan(path):
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    known = listed("torchtitan-options.txt")
    problems, n = [], 0
    for section, keys in cfg.items():
        for key in keys:
            n += 1
            if f"{section}.{key}" not in known:
                problems.append(f"[{section}] {key} is not a torchtitan option")
    par = cfg.get("parallelism", {})
    schedule = par.get("pipeline_parallel_schedule")
    names = {s.lower() for s in listed("torch-pipeline-schedules.txt")}
    if schedule is not None and schedule.lower() not in names:
        problems.append(f"schedule {schedule!r} is not a torch pipeline schedule")
    parts = par.get("module_fqns_per_model_part")
    if parts is not None:
        flat = [m for part in parts for m in part]
        if flat[:1] != ["tok_embeddings"] or flat[-2:] != ["norm", "output"]:
            problems.append("module lists: tok_embeddings first, norm and "
                            "output last")
        layers = [int(m.split(".")[1]) for m in flat if m.startswith("layers.")]
        if layers != list(range(len(layers))):
            problems.append("module lists: layers.N in order, each once")
        if len(parts) % par.get("pipeline_parallel_degree", 1):
            problems.append("module lists: not a multiple of the pipeline degree")
    return problems, n


def deepspeed(path):
    cfg = json.load(open(path))
    lines = [l for l in open(os.path.join(FIXTURES, "deepspeed-keys.txt"))
             if l.strip() and not l.startswith("#")]
    known = {l.split()[0] for l in lines}
    problems, n = [], 0
    for key, value in cfg.items():
        if key == "distopt":  # DeepSpeed ignores unknown top-level keys
            continue
        n += 1
        if key not in known:
            problems.append(f"{key} is not a DeepSpeed config key")
        if isinstance(value, dict):
            for sub in value:
                n += 1
                if f"{key}.{sub}" not in known:
                    problems.append(f"{key}.{sub} is not a DeepSpeed config key")
    plan = dict(kv.split("=") for kv in cfg["distopt"]["plan"].split(","))
    dp = int(plan["dp"])
    if cfg["train_batch_size"] != (cfg["train_micro_batch_size_per_gpu"] *
                                   cfg["gradient_accumulation_steps"] * dp):
        problems.append("train_batch_size != micro x accumulation x dp")
    if cfg["zero_optimization"]["stage"] not in (0, 1, 2, 3):
        problems.append("zero_optimization.stage not in 0..3")
    return problems, n


def main():
    trainer, path = sys.argv[1], sys.argv[2]
    problems, n = {"megatron": megatron, "torchtitan": torchtitan,
                   "deepspeed": deepspeed}[trainer](path)
    for p in problems:
        print(f"{path}: {p}")
    if problems:
        sys.exit(1)
    print(f"ok: {n} options")


if __name__ == "__main__":
    main()
