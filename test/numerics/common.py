"""Shared helpers of the numerical suites: finding the tools, compiling
models with dist-compile, running the generated programs, JUnit output.

Results are (name, status, message) with status one of "passed", "failed",
"skipped"; every suite ends with one "N passed, N failed, N skipped" line.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np


def tool(build, name):
    path = os.path.join(build, "bin", name)
    if not os.path.exists(path):
        sys.exit(f"error: {path} not found; build it with "
                 f"`scripts/build.sh {build} {name} DistRuntime`")
    return path


def work_dir(prefix):
    """The suite's scratch folder: a fresh temporary one, or with
    DIST_NUMERICS_WORK=DIR the folder DIR/PREFIX, emptied first. With a
    fixed folder two runs compile the same sources (an op's location names
    its file), so DIST_COMPILE_CACHE serves the second run's programs
    (scripts/test.sh runs every suite under two oneDNN ISAs)."""
    base = os.environ.get("DIST_NUMERICS_WORK")
    if not base:
        return tempfile.mkdtemp(prefix=prefix + "-")
    path = os.path.join(base, prefix)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def sanitize(name):
    """Output file stem the generated program uses for an output name."""
    s = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return s or "_"


def graph_only_weight(name, shape):
    """The initial value a generated program gives the weight `name` of a
    graph-only model (runtime/lib/gen/Program.cpp, fillWeight;
    docs/codegen.md): rank >= 2 uniform in +-1/sqrt(fan_in) from splitmix64
    of (FNV-1a of the name, element index), rank <= 1 ones for names ending
    in weight/scale/gamma/var, else zeros. For references that run such a
    model outside the program (onnxruntime)."""
    if len(shape) < 2:
        ones = name.endswith(("weight", "scale", "gamma", "var"))
        return np.full(shape, 1.0 if ones else 0.0, np.float32)
    u64 = np.uint64
    seed = u64(1469598103934665603)
    with np.errstate(over="ignore"):
        for c in name.encode():
            seed = (seed ^ u64(c)) * u64(1099511628211)
        n = int(np.prod(shape, dtype=np.int64))
        z = seed + np.arange(n, dtype=np.uint64) * u64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> u64(30))) * u64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u64(27))) * u64(0x94D049BB133111EB)
    z ^= z >> u64(31)
    uniform = (z >> u64(11)).astype(np.float64) / 2.0 ** 53
    bound = 1.0 / np.sqrt(float(n // shape[0]))
    return ((2 * uniform - 1) * bound).astype(np.float32).reshape(shape)


def compile_models(build, models, out, extra=(), env=None, timeout=900):
    """dist-compile NAME=PATH... --skip-unsupported -o out.

    Returns (ok, skipped: {name: reason}, seconds, log)."""
    cmd = [tool(build, "dist-compile"), "--skip-unsupported", "-o", out]
    cmd += list(extra)
    cmd += [f"{n}={p}" for n, p in models]
    t0 = time.time()
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=e)
    skipped = {}
    for line in p.stderr.splitlines():
        m = re.match(r"skipped (\S+): (.*)", line)
        if m:
            skipped[m.group(1)] = m.group(2)
    return p.returncode == 0, skipped, time.time() - t0, p.stderr


def run_program(binary, model, inputs, outdir, timeout=300, extra=()):
    """Runs `binary --model model NAME=FILE... -o outdir`."""
    os.makedirs(outdir, exist_ok=True)
    args = [binary, "--model", model, "-o", outdir] + list(extra)
    for name, arr in inputs:
        path = os.path.join(outdir, "in_" + sanitize(name) + ".npy")
        np.save(path, np.ascontiguousarray(arr))
        args.append(f"{name}={path}")
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def compare(name, got, want, rtol, atol):
    """None when equal within tolerance, else a message."""
    if got.shape != want.shape:
        return f"{name}: shape {got.shape} != expected {want.shape}"
    if want.dtype.kind in "biu" or want.dtype == bool:
        if got.dtype != want.dtype and not (got.dtype.kind in "biu"):
            return f"{name}: dtype {got.dtype} != expected {want.dtype}"
        if not np.array_equal(got.astype(want.dtype), want):
            bad = np.argwhere(got.astype(want.dtype) != want)
            return f"{name}: {len(bad)} elements differ, first at {bad[0].tolist()}"
        return None
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    nan_ok = np.array_equal(np.isnan(g), np.isnan(w))
    close = np.isclose(g, w, rtol=rtol, atol=atol) | (np.isnan(g) & np.isnan(w))
    if nan_ok and close.all():
        return None
    err = np.abs(g - w)
    err[np.isnan(err)] = np.inf
    k = int(np.argmax(err))
    return (f"{name}: max abs error {err.flat[k]:.3g} at flat index {k} "
            f"(got {g.flat[k]:.7g}, want {w.flat[k]:.7g}; rtol {rtol}, atol {atol})")


def end_weight_errors(state, refs, no_signal=1e-10):
    """Compares the end weights a training program saved in `state` with a
    reference. `refs` maps a tensor name to (reference end value, the
    largest |gradient| each element saw in the reference). Elements whose
    gradient never exceeded `no_signal` of the largest of all have none in
    exact arithmetic (a key bias under softmax's shift invariance); Adam
    turns their round-off into steps of up to lr, so they are left out.

    Returns a dict: worst per-tensor 2-norm relative error and its tensor,
    the largest single-element error (relative to the tensor's largest
    element), elements left out, tensors compared, and error messages for
    tensors the program did not save."""
    scale = max(float(np.max(g)) for _, g in refs.values())
    out = dict(worst=0.0, worst_name="", worst_elem=0.0, no_signal=0,
               compared=0, errors=[])
    for name, (ref, gradmax) in refs.items():
        path = os.path.join(state, sanitize(name) + ".npy")
        if not os.path.exists(path):
            out["errors"].append(f"the program saved no end value of {name}")
            continue
        w = np.load(path).astype(np.float64).reshape(ref.shape)
        signal = gradmax > no_signal * scale
        out["no_signal"] += int(np.sum(~signal))
        if not signal.any():
            continue
        diff, ref_k = (w - ref)[signal], ref[signal]
        rel = np.linalg.norm(diff) / np.linalg.norm(ref_k)
        out["compared"] += 1
        out["worst_elem"] = max(out["worst_elem"],
                                np.max(np.abs(diff)) / np.max(np.abs(ref_k)))
        if rel > out["worst"]:
            out["worst"], out["worst_name"] = rel, name
    return out


def finish(suite, results, junit, seconds):
    passed = sum(1 for r in results if r[1] == "passed")
    failed = sum(1 for r in results if r[1] == "failed")
    skipped = sum(1 for r in results if r[1] == "skipped")
    if junit:
        ts = ET.Element("testsuite", name=suite, tests=str(len(results)),
                        failures=str(failed), skipped=str(skipped),
                        time=f"{seconds:.2f}")
        for name, status, msg in results:
            tc = ET.SubElement(ts, "testcase", classname=suite, name=name)
            if status == "failed":
                ET.SubElement(tc, "failure", message=msg[:500]).text = msg
            elif status == "skipped":
                ET.SubElement(tc, "skipped", message=msg[:500])
        os.makedirs(os.path.dirname(os.path.abspath(junit)), exist_ok=True)
        ET.ElementTree(ts).write(junit, encoding="utf-8", xml_declaration=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
