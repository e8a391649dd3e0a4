#!/usr/bin/env python3
"""ONNX backend node tests through generated CPU executables.

Every test directory of Debian's libonnx-testdata (model.onnx plus
test_data_set_0/{input,output}_*.pb) is given to dist-compile, many models
per program (a Resize's scales, sizes or roi fed as graph inputs become
initializers of a pinned copy, as exporters write them) (--skip-unsupported leaves out those with an op that has no
lowering, naming the reason). Each compiled model then runs on the test's
inputs and its outputs are compared with the expected ones.

    .venv/bin/python test/numerics/run_node_tests.py --build build --junit out.xml

Prints a line per failure, the skip reasons grouped, and a closing
"N passed, N failed, N skipped" line; exits non-zero when any test failed.
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import shutil
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DATA = "/usr/share/libonnx-testdata/data/node"

# Tests that fail for a documented reason outside code generation. Each is
# reported as skipped with the reason while it fails, and as a failure
# ("unexpected pass") once it passes, so the list cannot go stale.
_ALIGN_CORNERS = (
    "the test data follows onnx.reference, whose align_corners divides by "
    "scale x input length (3.2 here) where onnxruntime and PyTorch divide "
    "by the output's length less one; the importer follows onnxruntime "
    "(which is also 0.86-1.05 off this data)")
KNOWN_GAPS = {
    "test_resize_downsample_scales_cubic_align_corners": _ALIGN_CORNERS,
    "test_resize_downsample_scales_linear_align_corners": _ALIGN_CORNERS,
}


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def load_case(d):
    """(input names, inputs, output names, outputs) of test_data_set_0."""
    model = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    in_names = [i.name for i in model.graph.input if i.name not in inits]
    out_names = [o.name for o in model.graph.output]
    ds = os.path.join(d, "test_data_set_0")
    ins = [load_pb(p)[1] for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                                          key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))]
    outs = [load_pb(p)[1] for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")),
                                           key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))]
    return in_names, ins, out_names, outs


# Operands that exporters write as constants and the importer needs as
# constants (the interpolation of a Resize follows its scales or sizes; a
# reduction's axes, an input since ReduceSum-13, set its result's shape):
# the node tests feed them as graph inputs, so a test's values for them
# become initializers of a pinned copy of the model.
CONSTANT_OPERANDS = {"Resize": (1, 2, 3), "Upsample": (1,), "ReduceSum": (1,),
                     "CumSum": (1,), "TopK": (1,)}


def pin_constant_inputs(d, work):
    """The model path to compile for test `d` and the graph inputs it still
    has: `d`'s model.onnx, or a copy in `work` whose CONSTANT_OPERANDS
    graph inputs are initializers holding the test's values."""
    path = os.path.join(d, "model.onnx")
    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    pinned = {n.input[k] for n in model.graph.node
              for k in CONSTANT_OPERANDS.get(n.op_type, ())
              if k < len(n.input) and n.input[k] in inputs}
    if not pinned:
        return path, None
    in_names, ins, _, _ = load_case(d)
    for name, value in zip(in_names, ins):
        if name in pinned:
            model.graph.initializer.append(numpy_helper.from_array(value, name))
    kept = [i for i in model.graph.input if i.name not in pinned]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    out = os.path.join(work, os.path.basename(d) + ".pinned.onnx")
    onnx.save(model, out)
    return out, pinned


def reason_key(reason):
    m = re.search(r"graph\.opaque '([^']+)'", reason)
    if m:
        return "no graph op (kept opaque): " + m.group(1)
    m = re.search(r"(graph\.\w+[^;(]*?)(?: has no lowering|: )", reason)
    if m and "no lowering" in reason:
        return reason[:120]
    return reason[:120]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--junit")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--filter", default="", help="regex on test names")
    ap.add_argument("--batch", type=int, default=80,
                    help="models per compiled program")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    if not os.path.isdir(args.data):
        print(f"libonnx-testdata not installed ({args.data} missing): "
              "apt-get install libonnx-testdata")
        return common.finish("numerics.node", [("node-tests", "skipped",
                                                "libonnx-testdata missing")],
                             args.junit, 0)
    dirs = sorted(d for d in glob.glob(os.path.join(args.data, "test_*"))
                  if os.path.exists(os.path.join(d, "model.onnx"))
                  and re.search(args.filter, os.path.basename(d)))
    work = common.work_dir("dist-node-tests")
    results = []
    batches = [dirs[i:i + args.batch] for i in range(0, len(dirs), args.batch)]
    models, pinned = {}, {}
    for d in dirs:
        try:
            models[d], pinned[d] = pin_constant_inputs(d, work)
        except Exception:  # a model or test data onnx cannot read
            models[d], pinned[d] = os.path.join(d, "model.onnx"), None

    def build(k, batch):
        exe = os.path.join(work, f"batch{k}.bin")
        ok, skipped, secs, log = common.compile_models(
            args.build, [(os.path.basename(d), models[d]) for d in batch], exe,
            env={"DIST_OPT_LEVEL": os.environ.get("DIST_OPT_LEVEL", "-O1")})
        return k, exe, ok, skipped, secs, log

    compiled = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for k, exe, ok, skipped, secs, log in pool.map(lambda kb: build(*kb),
                                                       enumerate(batches)):
            compiled[k] = (exe, ok, skipped, log)
            if args.verbose:
                print(f"batch {k}: {len(batches[k])} models, "
                      f"{len(skipped)} skipped, compiled in {secs:.1f} s")
    compile_secs = time.time() - t0
    skip_reasons = collections.Counter()
    ran = 0
    for k, batch in enumerate(batches):
        exe, ok, skipped, log = compiled[k]
        for d in batch:
            name = os.path.basename(d)
            if name in skipped:
                results.append((name, "skipped", skipped[name]))
                skip_reasons[reason_key(skipped[name])] += 1
                continue
            if not ok:
                msg = "batch program failed to build: " + log[-2000:]
                results.append((name, "failed", msg))
                continue
            try:
                in_names, ins, out_names, outs = load_case(d)
            except Exception as ex:  # a test whose data onnx cannot read
                results.append((name, "skipped", f"test data unreadable: {ex}"))
                skip_reasons["test data unreadable"] += 1
                continue
            if pinned[d] and len(in_names) == len(ins):
                kept = [(n, v) for n, v in zip(in_names, ins) if n not in pinned[d]]
                in_names, ins = [n for n, _ in kept], [v for _, v in kept]
            if len(in_names) != len(ins):
                results.append((name, "skipped",
                                "optional inputs omitted by the test data"))
                skip_reasons["optional inputs omitted"] += 1
                continue
            outdir = os.path.join(work, name)
            ran += 1
            rc, text = common.run_program(exe, name, list(zip(in_names, ins)), outdir)
            if rc != 0:
                results.append((name, "failed", text.strip()[-1500:]))
                continue
            errors = []
            for oname, want in zip(out_names, outs):
                path = os.path.join(outdir, common.sanitize(oname) + ".npy")
                if not os.path.exists(path):
                    errors.append(f"{oname}: no output file")
                    continue
                msg = common.compare(oname, np.load(path), want, args.rtol, args.atol)
                if msg:
                    errors.append(msg)
            if name in KNOWN_GAPS:
                if errors:
                    results.append((name, "skipped", KNOWN_GAPS[name]))
                    skip_reasons["known gap (see KNOWN_GAPS)"] += 1
                else:
                    results.append((name, "failed", "unexpected pass: remove it "
                                    "from KNOWN_GAPS in run_node_tests.py"))
                continue
            results.append((name, "failed" if errors else "passed", "; ".join(errors)))
    for name, status, msg in results:
        if status == "failed":
            print(f"FAIL {name}: {msg}")
    print(f"\nnode tests: {len(dirs)} models, {ran} compiled and ran, "
          f"{sum(1 for r in results if r[1] == 'skipped')} skipped; "
          f"compile {compile_secs:.0f} s, total {time.time() - t0:.0f} s")
    print("skip reasons:")
    for reason, n in skip_reasons.most_common():
        print(f"  {n:4d}  {reason}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("work dir:", work)
    return common.finish("numerics.node", results, args.junit, time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
