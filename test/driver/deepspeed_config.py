#!/usr/bin/env python3
"""--dist-export=deepspeed files load in DeepSpeed's own config parser.

For plans over the data-, tensor- and pipeline-parallel degrees, ZeRO
stages, micro-batching, precision and recomputation, dist-opt writes the
DeepSpeed config and DeepSpeedConfig (DeepSpeed 0.19.8, requirements-
deepspeed.txt) reads it: its pydantic models reject unknown keys under
zero_optimization, bf16, fp16 and tensor_parallel, and it asserts
train_batch_size = micro-batch x accumulation steps x data-parallel size.
A config with a misspelt key must fail to load (the check can fail).

    .venv-fixtures/bin/python test/driver/deepspeed_config.py --build build --junit out.xml
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "numerics"))
import common  # noqa: E402

PLANS = [
    ("dp8_zero0", "dp=8,tp=1,pp=1,mbs=4,schedule=1f1b", 64, "bf16"),
    ("dp4_tp2_zero2", "dp=4,tp=2,pp=1,mbs=2,schedule=1f1b,zero=2", 64, "bf16"),
    ("dp2_tp2_pp2_zero1_full", "dp=2,tp=2,pp=2,mbs=1,schedule=1f1b,zero=1,recompute=full", 32, "fp16"),
    ("dp8_zero3_fp32", "dp=8,tp=1,pp=1,mbs=1,schedule=1f1b,zero=3", 16, "fp32"),
]


def load(path):
    """DeepSpeedConfig of the file; raises what DeepSpeed raises."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import deepspeed.comm as dist
    # No process group: the config asks the rank and world size only to
    # derive the data-parallel size, which the mpu below gives.
    dist.get_rank = lambda *a, **k: 0
    dist.get_world_size = lambda *a, **k: 1
    from deepspeed.runtime.config import DeepSpeedConfig
    cfg = json.load(open(path))
    plan = dict(kv.split("=") for kv in cfg["distopt"]["plan"].split(","))

    class Mpu:
        def get_data_parallel_world_size(self):
            return int(plan["dp"])

        def get_model_parallel_world_size(self):
            return int(plan["tp"])

        def get_pipeline_model_parallel_world_size(self):
            return int(plan["pp"])

    return DeepSpeedConfig(cfg, mpu=Mpu()), cfg, plan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--junit")
    args = ap.parse_args()
    start = time.time()
    results = []
    try:
        import deepspeed  # noqa: F401
    except ImportError as e:
        print(f"DeepSpeed is not importable ({e}): pip install --no-deps -r "
              "requirements-deepspeed.txt into a venv that sees torch")
        return 1
    dist_opt = common.tool(args.build, "dist-opt")
    modelgen = common.tool(args.build, "dist-modelgen")
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "gpt.onnx")
        subprocess.run([modelgen, "gpt", "--layers", "4", "--hidden", "512",
                        "--heads", "8", "--seq", "256", "--vocab", "8000",
                        "-o", model], check=True, capture_output=True)
        for name, plan, batch, dtype in PLANS:
            out = os.path.join(work, name + ".json")
            p = subprocess.run([dist_opt, model, "--dist-weights=ignore",
                                "--dist-cluster=dgx-a100-80gb:1",
                                f"--dist-batch={batch}", f"--dist-plan={plan}",
                                f"--dist-dtype={dtype}",
                                f"--dist-export=deepspeed:{out}", "-o", os.devnull],
                               capture_output=True, text=True)
            if p.returncode:
                results.append((name, "failed", p.stderr[-800:]))
                continue
            try:
                c, cfg, parsed = load(out)
                want = (batch, int(parsed["mbs"]),
                        batch // (int(parsed["mbs"]) * int(parsed["dp"])),
                        int(parsed.get("zero", 0)))
                got = (c.train_batch_size, c.train_micro_batch_size_per_gpu,
                       c.gradient_accumulation_steps, int(c.zero_optimization_stage))
                if got != want:
                    results.append((name, "failed", f"DeepSpeed read {got}, the plan is {want}"))
                else:
                    results.append((name, "passed", ""))
                    print(f"{name}: DeepSpeed reads batch {got[0]} = {got[1]} x {got[2]} x dp, ZeRO-{got[3]}")
            except Exception as e:  # what DeepSpeed raises: ValidationError, AssertionError
                results.append((name, "failed", f"{type(e).__name__}: {e}"[:800]))
        # The check can fail: a misspelt ZeRO key is refused.
        bad = os.path.join(work, "misspelt.json")
        cfg = json.load(open(os.path.join(work, PLANS[1][0] + ".json")))
        cfg["zero_optimization"]["stagee"] = 2
        json.dump(cfg, open(bad, "w"))
        try:
            load(bad)
            results.append(("misspelt_key_refused", "failed",
                            "DeepSpeed accepted zero_optimization.stagee"))
        except Exception as e:
            results.append(("misspelt_key_refused", "passed", ""))
            print(f"misspelt_key_refused: {type(e).__name__}")
    return common.finish("deepspeed-config", results, args.junit, time.time() - start)


if __name__ == "__main__":
    sys.exit(main())
