#!/usr/bin/env python3
"""Runs dist-opt's ONNX importer over many models and classifies each run.

Two modes:

  run_sweep.py [--dist-opt PATH] [--root DIR]      (sweep, default)
      Imports every `model.onnx` of Debian's libonnx-testdata (1072 files;
      the folder comes from `dpkg -L libonnx-testdata`, or --root). Each run
      is one of
        imported     exit 0, output re-parses with dist-opt, no `error:`
        clean error  non-zero exit with an `error:` diagnostic line
        FAILURE      crash/signal, timeout, non-zero exit without `error:`,
                     a fatal-error/stack-dump banner, or exit 0 with output
                     that is not a valid module
      Prints the counts, the failures, the clean errors grouped by message,
      the ONNX op types that went `graph.opaque`, and exits 1 iff there is
      any FAILURE.

  run_sweep.py --fixtures [DIR]                      (real networks)
      Imports the real-network fixtures (test/fixtures/*.onnx;
      `--dist-weights=ignore` for graph-only ones). Each must import, once
      as is and once with the batch pinned to 4 by --input-shape (then every
      function result must have leading dim 4), and no
      `graph.opaque` op may be on the compute path, i.e. have a
      floating-point result (integer/bool-valued opaque ops only compute
      shapes or masks; they are listed but allowed), except the known
      importer gaps in KNOWN_OPAQUE, which are listed. Exits 1 otherwise.

Standard library only; works with any python3 >= 3.7.
"""

import argparse
import collections
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(SRC, "test", "fixtures")
REAL_FIXTURES = ["resnet50", "resnet50_train", "vgg16", "mobilenetv2", "gpt2",
                 "bert", "llama", "t5", "wav2vec2"]
# Known importer gaps: op types allowed on a fixture's compute path until the
# importer models them. Anything else opaque there fails; when a listed one
# is no longer opaque the check says so, and the entry should go.
# Importer gaps accepted per fixture (none left: training-mode
# BatchNormalization is modelled now).
KNOWN_OPAQUE = {}
# Graph inputs of each real-network fixture with the batch dim left out; the
# --fixtures check imports each once more with the batch pinned to this.
PINNED_BATCH = 4
FIXTURE_INPUTS = {
    "resnet50": {"input": "3x224x224"},
    "resnet50_train": {"input": "3x224x224"},
    "vgg16": {"input": "3x224x224"},
    "mobilenetv2": {"input": "3x224x224"},
    "gpt2": {"input_ids": "32"},
    "bert": {"input_ids": "32", "attention_mask": "32"},
    "llama": {"input_ids": "32"},
    "t5": {"input_ids": "32", "decoder_input_ids": "16"},
    "wav2vec2": {"input_values": "1600"},
}
FUNC_RESULTS = re.compile(r"func\.func @\w+\(.*\)\s*->\s*(.*)\{\s*$", re.M)

ERROR_LINE = re.compile(r"(^|[\s:])error: ", re.M)
# Banners of an abort, an llvm::report_fatal_error or a crash handler: never a
# clean error, whatever the exit code.
CRASH_MARKERS = ("LLVM ERROR:", "Stack dump:", "PLEASE submit a bug report",
                 "Assertion `", "Segmentation fault", "terminate called",
                 "UNREACHABLE executed")
VERIFIER_ERROR = re.compile(r"error: '[\w.]+' op ")
OPAQUE = re.compile(r'graph\.opaque\s+"([^"]*)"')
DOMAIN = re.compile(r'\bdomain\s*=\s*"([^"]*)"')
FLOAT_ELEM = re.compile(r"^(f16|bf16|f32|f64|f8\w*|tf32|complex<.*>)$")


def find_dist_opt(explicit):
    if explicit:
        return explicit
    candidates = [os.environ.get("DIST_OPT", "")]
    candidates += sorted(glob.glob(os.path.join(SRC, "build*", "bin",
                                                "dist-opt")),
                         key=lambda p: -os.path.getmtime(p))
    candidates.append(shutil.which("dist-opt") or "")
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    sys.exit("run_sweep.py: error: no dist-opt found; build it "
             "(scripts/build.sh build dist-opt) or pass --dist-opt PATH")


def testdata_models(root):
    if root:
        files = glob.glob(os.path.join(root, "**", "model.onnx"),
                          recursive=True)
    else:
        try:
            listing = subprocess.run(["dpkg", "-L", "libonnx-testdata"],
                                     check=True, capture_output=True,
                                     text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            sys.exit("run_sweep.py: error: libonnx-testdata is not installed;"
                     " run `apt-get install -y libonnx-testdata` or pass "
                     "--root DIR")
        files = [l for l in listing.split() if l.endswith("/model.onnx")]
    return sorted(files)


def result_types(op_text):
    """Element types of the results in an op's `: (...) -> ...` suffix."""
    arrow = op_text.rfind("->")
    if arrow < 0:
        return []
    elems = []
    for t in re.findall(r"tensor<([^<>]*(?:<[^<>]*>)?[^<>]*)>",
                        op_text[arrow:]):
        elems.append(t.split("x")[-1].strip())
    return elems


def opaque_ops(ir):
    """(op_type, domain, is_float) for each graph.opaque in printed IR."""
    ops = []
    for line in ir.splitlines():
        m = OPAQUE.search(line)
        if not m:
            continue
        d = DOMAIN.search(line)
        domain = d.group(1) if d else ""
        is_float = any(FLOAT_ELEM.match(e) for e in result_types(line))
        ops.append((m.group(1), domain, is_float))
    return ops


def run_one(dist_opt, path, extra, timeout, roundtrip):
    """Imports one model; returns a dict with 'status' and details."""
    start = time.time()
    cmd = [dist_opt, path] + extra
    rec = {"path": path, "cmd": " ".join(cmd), "opaque": []}
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        rec.update(status="FAILURE", why="timeout after %gs" % timeout)
        return rec
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    rec["seconds"] = time.time() - start
    rec["stderr"] = err
    crash = next((m for m in CRASH_MARKERS if m in err), None)
    if p.returncode < 0:
        rec.update(status="FAILURE", why="killed by signal %d" % -p.returncode)
    elif crash:
        rec.update(status="FAILURE", why="crash banner %r (exit %d)"
                   % (crash, p.returncode))
    elif p.returncode != 0:
        m = ERROR_LINE.search(err)
        if m:
            line = err[m.start():].lstrip(" :\n").splitlines()[0]
            rec.update(status="clean error", why=line)
        else:
            rec.update(status="FAILURE", why="exit %d without an `error:` "
                       "line" % p.returncode)
    elif ERROR_LINE.search(err):
        rec.update(status="FAILURE", why="exit 0 but printed an error")
    elif "func.func" not in out or "module" not in out:
        rec.update(status="FAILURE", why="exit 0 but the output has no "
                   "module/func.func")
    else:
        rec["status"] = "imported"
        rec["opaque"] = opaque_ops(out)
        if roundtrip:
            rec["ir"] = out
    return rec


def reparse(dist_opt, ir, timeout, flags=()):
    """Feeds printed IR back to dist-opt; returns why it failed, or None."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(ir)
        name = f.name
    try:
        p = subprocess.run([dist_opt, name] + list(flags) +
                           ["-o", os.devnull],
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "printed IR does not re-parse: timeout"
    finally:
        os.unlink(name)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        first = next((l for l in err if ERROR_LINE.search(l)),
                     err[0] if err else "exit %d" % p.returncode)
        return "printed IR does not re-parse: %s" % first
    return None


SPLIT = "// -----"
CHUNK = 64


def reparse_chunk(dist_opt, recs, timeout):
    """Re-parses many printed modules in one `--split-input-file` run (one
    process start instead of len(recs)); on any error, each one alone to
    find which."""
    if len(recs) > 1:
        text = ("\n%s\n" % SPLIT).join(r["ir"] for r in recs)
        if reparse(dist_opt, text, timeout * len(recs),
                   ["--split-input-file"]) is None:
            return
    for r in recs:
        why = reparse(dist_opt, r["ir"], timeout)
        if why:
            r.update(status="FAILURE", why=why)


def run_all(dist_opt, jobs, extra_for, paths, timeout, roundtrip):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_one, dist_opt, p, extra_for(p), timeout,
                               roundtrip) for p in paths]
        results = [f.result() for f in futures]
        if roundtrip:
            done = [r for r in results if "ir" in r]
            chunks = [done[i:i + CHUNK] for i in range(0, len(done), CHUNK)]
            for f in [pool.submit(reparse_chunk, dist_opt, c, timeout)
                      for c in chunks]:
                f.result()
            for r in done:
                del r["ir"]
    return results


def write_junit(path, suite, cases):
    """Writes JUnit XML: `cases` is a list of (name, failure or None, text)."""
    if not path:
        return
    root = ET.Element("testsuite", name=suite, tests=str(len(cases)),
                      failures=str(sum(1 for _, f, _ in cases if f)))
    for name, failure, text in cases:
        case = ET.SubElement(root, "testcase", classname=suite, name=name)
        if failure:
            ET.SubElement(case, "failure", message=failure).text = text
        elif text:
            ET.SubElement(case, "system-out").text = text
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def short(path):
    for base in ("/usr/share/libonnx-testdata/data/", SRC + os.sep):
        if path.startswith(base):
            return path[len(base):]
    return path


def report_failures(failures):
    for r in failures:
        print("FAILURE %s: %s" % (short(r["path"]), r["why"]))
        print("  command: %s" % r["cmd"])
        for line in r.get("stderr", "").strip().splitlines()[-6:]:
            print("  | " + line)


def sweep(args, dist_opt):
    paths = testdata_models(args.root)
    if args.filter:
        paths = [p for p in paths if re.search(args.filter, p)]
    if args.limit:
        paths = paths[:args.limit]
    if not paths:
        sys.exit("run_sweep.py: error: no model.onnx files found")
    extra = ["--dist-weights=ignore"] if args.weights == "ignore" else []
    start = time.time()
    results = run_all(dist_opt, args.jobs, lambda p: extra, paths,
                      args.timeout, not args.no_roundtrip)
    took = time.time() - start
    counts = collections.Counter(r["status"] for r in results)
    failures = [r for r in results if r["status"] == "FAILURE"]
    errors = collections.Counter(re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_",
                                        r["why"].split("error: ", 1)[-1])
                                 for r in results
                                 if r["status"] == "clean error")
    opaque = collections.defaultdict(set)
    for r in results:
        for op, domain, _ in r["opaque"]:
            opaque[(domain + "::" if domain else "") + op].add(r["path"])

    print("dist-opt import sweep over libonnx-testdata: %d models, %.1fs, "
          "%d jobs (%s)" % (len(results), took, args.jobs, dist_opt))
    print("  imported:    %d" % counts["imported"])
    print("  clean error: %d" % counts["clean error"])
    print("  FAILURE:     %d" % counts["FAILURE"])
    if errors:
        print("\nclean errors by message (quoted names and numbers as _):")
        for msg, n in errors.most_common(args.top):
            print("  %5d  %s" % (n, msg[:150]))
    # An importer that builds IR its own verifier rejects has a bug even
    # when it exits cleanly: list those apart (they do not fail the sweep).
    verifier = [r for r in results if r["status"] == "clean error" and
                VERIFIER_ERROR.search(r["why"])]
    if verifier:
        print("\nclean errors raised by the IR verifier, not the importer "
              "(likely importer bugs):")
        for r in verifier:
            print("  %s: %s" % (short(r["path"]), r["why"][:160]))
    if opaque:
        print("\nop types imported as graph.opaque (models using each):")
        for op in sorted(opaque, key=lambda o: (-len(opaque[o]), o)):
            print("  %5d  %s" % (len(opaque[op]), op))
    if failures:
        print("\nfailures:")
        report_failures(failures)
    if args.list:
        print("\nper model:")
        for r in results:
            print("  %-12s %s  %s" % (r["status"], short(r["path"]),
                                      r.get("why", "")))
    write_junit(args.junit, "sweep", [
        (short(r["path"]),
         r["why"] if r["status"] == "FAILURE" else None,
         "%s: %s\n%s" % (r["status"], r.get("why", ""),
                         r.get("stderr", "")[-2000:]))
        for r in results])
    print("\n%d passed, %d failed" % (len(results) - len(failures),
                                     len(failures)))
    return 1 if failures else 0


def fixtures(args, dist_opt):
    folder = args.fixtures
    names = args.only or REAL_FIXTURES
    paths = [os.path.join(folder, n + ".onnx") for n in names]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        sys.exit("run_sweep.py: error: missing fixtures %s; regenerate with "
                 "test/fixtures/make_fixtures.py" % ", ".join(missing))

    def extra_for(path):
        with open(path, "rb") as f:
            graph_only = b"distopt.graph_only" in f.read()
        return ["--dist-weights=ignore"] if graph_only else []

    results = run_all(dist_opt, args.jobs, extra_for, paths, args.timeout,
                      not args.no_roundtrip)
    bad = 0
    cases = []
    for r in results:
        name = short(r["path"])
        if r["status"] != "imported":
            bad += 1
            cases.append((name + " import", "%s: %s" % (r["status"], r["why"]),
                          r.get("stderr", "")[-2000:]))
            print("FAIL %s: %s: %s" % (name, r["status"], r["why"]))
            for line in r.get("stderr", "").strip().splitlines()[-6:]:
                print("  | " + line)
            continue
        stem = os.path.basename(r["path"])[:-len(".onnx")]
        known = KNOWN_OPAQUE.get(stem, set())
        compute = collections.Counter(op for op, _, f in r["opaque"]
                                      if f and op not in known)
        gaps = collections.Counter(op for op, _, f in r["opaque"]
                                   if f and op in known)
        shape = collections.Counter(op for op, _, f in r["opaque"] if not f)
        status = "FAIL" if compute else "ok  "
        bad += bool(compute)
        line = ("imported in %.2fs; opaque on compute path: %s; "
                "opaque shape/mask ops: %s" % (
                    r["seconds"], dict(compute) if compute else "none",
                    dict(shape) if shape else "none"))
        if gaps:
            line += "; known importer gaps (allowed): %s" % dict(gaps)
        fixed = sorted(known - set(gaps))
        if fixed:
            line += ("; %s no longer opaque: drop from KNOWN_OPAQUE"
                     % ", ".join(fixed))
        cases.append((name + " import", line if compute else None, line))
        print("%s %s: %s" % (status, name, line))
    # The same fixtures with the batch pinned: every result must carry it.
    for name, path in zip(names, paths):
        flags = extra_for(path) + [
            "--input-shape=%s:%dx%s" % (i, PINNED_BATCH, dims)
            for i, dims in sorted(FIXTURE_INPUTS[name].items())]
        why = pinned_batch_problem(dist_opt, path, flags, args.timeout)
        bad += bool(why)
        cases.append((short(path) + " pinned batch", why, " ".join(flags)))
        print("%s %s: with %s: %s" % ("FAIL" if why else "ok  ", short(path),
                                      " ".join(flags[-2:]),
                                      why or "every result has batch %d"
                                      % PINNED_BATCH))
    write_junit(args.junit, "fixtures", cases)
    print("\n%d passed, %d failed" % (2 * len(results) - bad, bad))
    return 1 if bad else 0


def pinned_batch_problem(dist_opt, path, flags, timeout):
    """Imports with pinned input shapes; returns what is wrong, or None."""
    try:
        p = subprocess.run([dist_opt, path] + flags, capture_output=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        line = next((l for l in err.splitlines() if ERROR_LINE.search(l)),
                    "exit %d" % p.returncode)
        return line.strip()
    m = FUNC_RESULTS.search(p.stdout.decode("utf-8", "replace"))
    if not m:
        return "no func.func signature in the output"
    shapes = re.findall(r"tensor<([^>]*)>", m.group(1))
    wrong = [t for t in shapes if not t.startswith("%dx" % PINNED_BATCH)]
    if not shapes or wrong:
        return "results %s do not all have leading dim %d" % (
            shapes, PINNED_BATCH)
    return None


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 2)[2])
    parser.add_argument("--dist-opt", help="dist-opt binary (default: "
                        "$DIST_OPT, newest build*/bin/dist-opt, PATH)")
    parser.add_argument("--fixtures", nargs="?", const=FIXTURES,
                        help="check the real-network fixtures in this folder "
                        "(default test/fixtures) instead of sweeping")
    parser.add_argument("--only", nargs="*", choices=REAL_FIXTURES,
                        help="with --fixtures: only these")
    parser.add_argument("--root", help="sweep model.onnx files under this "
                        "folder instead of libonnx-testdata's")
    parser.add_argument("--filter", help="only paths matching this regex")
    parser.add_argument("--limit", type=int, help="only the first N models")
    parser.add_argument("--weights", choices=["reference", "ignore"],
                        default="reference", help="sweep weight mode: "
                        "reference (default; testdata weights are inline) "
                        "or ignore (--dist-weights=ignore)")
    parser.add_argument("--allow-opaque", action="append", default=[],
                        metavar="STEM:OP",
                        help="accept op type OP kept opaque in fixture STEM "
                             "(a known importer gap; repeatable)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per model (default 30)")
    parser.add_argument("--no-roundtrip", action="store_true",
                        help="skip re-parsing the printed IR")
    parser.add_argument("--top", type=int, default=25,
                        help="how many clean-error messages to show")
    parser.add_argument("--junit", metavar="FILE",
                        help="also write the results as JUnit XML (one "
                        "testcase per model or fixture check)")
    parser.add_argument("--list", action="store_true",
                        help="also print every model's status")
    args = parser.parse_args()
    for entry in args.allow_opaque:
        stem, _, op = entry.partition(":")
        if not stem or not op:
            parser.error("--allow-opaque takes STEM:OP, got %r" % entry)
        KNOWN_OPAQUE.setdefault(stem, set()).add(op)
    dist_opt = find_dist_opt(args.dist_opt)
    if args.fixtures:
        return fixtures(args, dist_opt)
    return sweep(args, dist_opt)


if __name__ == "__main__":
    sys.exit(main())
