#!/usr/bin/env python3
"""Checks run_sweep.py's classification against a fake dist-opt.

The fake reads the model folder's name and behaves accordingly (imports,
errors cleanly, crashes, hangs, ...), so every class the sweep knows is
exercised without building anything. Exits 0 iff all checks pass.

  python3 test/sweep/selftest.py [--junit FILE]
"""

import os
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))

FAKE = r'''#!/usr/bin/env python3
import os, signal, sys, time
path = sys.argv[1]
kind = os.path.basename(os.path.dirname(path))
stem = os.path.basename(path)[:-len(".onnx")]
if stem != "model" and path.endswith(".onnx"):
    # --fixtures mode: gpt2 imports, bert has a float opaque op, llama is
    # graph-only and imports only with --dist-weights=ignore.
    kind = {"gpt2": "good", "bert": "opaque", "llama": "good",
            "resnet50_train": "bn"}[stem]
    if stem == "llama" and "--dist-weights=ignore" not in sys.argv:
        sys.stderr.write(path + ": error: llama.weights not found\n")
        sys.exit(1)
if path.endswith(".mlir"):
    text = open(path).read()
    if "BROKEN" in text:
        sys.stderr.write(path + ":1:1: error: custom op 'graph.broken' is unknown\n")
        sys.exit(1)
    sys.exit(0)
ok = ('module {\n  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n'
      'BODY    return %0 : tensor<2xf32>\n  }\n}\n')
# A pinned batch (--input-shape=NAME:4x...) makes the results 4x2 (bert
# ignores it, so its pinned check must fail).
if any(a.startswith("--input-shape=") for a in sys.argv) and "bert" not in path:
    ok = ok.replace("-> tensor<2xf32>", "-> tensor<4x2xf32>")
if kind == "good":
    print(ok.replace('BODY', '    %0 = graph.relu %arg0 : tensor<2xf32>\n'))
elif kind == "opaque":
    print(ok.replace('BODY', '    %s = graph.opaque "Shape"(%arg0) : (tensor<2xf32>) -> tensor<1xi64>\n'
                '    %0 = graph.opaque "FancyOp"(%arg0) {domain = "com.x", attrs = {a = "b"}} '
                ': (tensor<2xf32>) -> tensor<2xf32>\n'))
elif kind == "bn":
    print(ok.replace('BODY', '    %0:3 = graph.opaque "BatchNormalization"(%arg0) '
                     ': (tensor<2xf32>) -> (tensor<2xf32>, tensor<1xf32>, tensor<1xf32>)\n'))
elif kind == "error":
    sys.stderr.write(path + ":0:0: error: unsupported opset 99; supported 1..23\n")
    sys.exit(1)
elif kind == "verifier":
    sys.stderr.write(path + ":0:0: error: 'graph.flatten' op 'axis' 9 is out of range for rank 2\n")
    sys.exit(1)
elif kind == "silent":
    sys.exit(3)
elif kind == "abort":
    sys.stderr.write("LLVM ERROR: out of memory\n")
    os.kill(os.getpid(), signal.SIGABRT)
elif kind == "fatal":
    sys.stderr.write("LLVM ERROR: something\nerror: also this\n")
    sys.exit(1)
elif kind == "hang":
    time.sleep(30)
elif kind == "garbage":
    print("hello")
elif kind == "broken":
    print(ok.replace('BODY', '    %0 = graph.broken BROKEN\n'))
elif kind == "error0":
    sys.stderr.write("error: printed but exit 0\n")
    print(ok.replace('BODY', '    %0 = graph.relu %arg0 : tensor<2xf32>\n'))
'''

EXPECT = {"good": "imported", "opaque": "imported", "error": "clean error",
          "verifier": "clean error",
          "silent": "FAILURE", "abort": "FAILURE", "fatal": "FAILURE",
          "hang": "FAILURE", "garbage": "FAILURE", "broken": "FAILURE",
          "error0": "FAILURE"}


def main():
    junit_out = None
    if len(sys.argv) == 3 and sys.argv[1] == "--junit":
        junit_out = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: selftest.py [--junit FILE]")
    results = []  # (name, ok)
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "fake-dist-opt")
        with open(fake, "w") as f:
            f.write(FAKE)
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        for kind in EXPECT:
            os.makedirs(os.path.join(tmp, "models", kind))
            open(os.path.join(tmp, "models", kind, "model.onnx"), "w").close()
        junit = os.path.join(tmp, "sweep.xml")
        p = subprocess.run([sys.executable, os.path.join(HERE, "run_sweep.py"),
                            "--dist-opt", fake, "--root",
                            os.path.join(tmp, "models"), "--timeout", "3",
                            "--list", "--junit", junit],
                           capture_output=True, text=True)
        out = p.stdout
        try:
            cases = list(ET.parse(junit).getroot().iter("testcase"))
        except (OSError, ET.ParseError):
            cases = []
        junit_failed = sorted(
            os.path.basename(os.path.dirname(c.get("name"))) for c in cases
            if c.find("failure") is not None)
        for kind, status in EXPECT.items():
            line = next((l for l in out.splitlines()
                         if l.strip().startswith(status) and
                         "/%s/model.onnx" % kind in l), None)
            results.append(("%s is classified %r" % (kind, status),
                            line is not None))
        checks = [
            (p.returncode == 1, "exit code 1 with failures (got %d)"
             % p.returncode),
            ("  imported:    2" in out, "2 imported"),
            ("  clean error: 2" in out, "2 clean errors"),
            ("IR verifier, not the importer" in out and
             "verifier/model.onnx: error: 'graph.flatten'" in out,
             "verifier-raised errors listed apart"),
            ("  FAILURE:     7" in out, "7 failures"),
            (len(cases) == len(EXPECT) and junit_failed == sorted(
                k for k, v in EXPECT.items() if v == "FAILURE"),
             "JUnit XML with one testcase per model, failures marked "
             "(got %s)" % junit_failed),
            ("com.x::FancyOp" in out, "opaque op with its domain listed"),
            ("Shape" in out, "opaque Shape listed"),
            ("unsupported opset _; supported _.._" in out,
             "clean errors grouped with numbers masked"),
        ]
        # Only clean results: exit 0.
        p2 = subprocess.run([sys.executable,
                             os.path.join(HERE, "run_sweep.py"), "--dist-opt",
                             fake, "--root", os.path.join(tmp, "models"),
                             "--filter", "/(good|error|opaque)/"],
                            capture_output=True, text=True)
        checks.append((p2.returncode == 0, "a sweep without failures exits 0"
                       " (got %d)" % p2.returncode))
        # --fixtures: float opaque ops fail, graph-only gets the ignore flag.
        fix = os.path.join(tmp, "fixtures")
        os.makedirs(fix)
        for stem, data in (("gpt2", b""), ("bert", b""),
                           ("llama", b"distopt.graph_only"),
                           ("resnet50_train", b"")):
            with open(os.path.join(fix, stem + ".onnx"), "wb") as f:
                f.write(data)
        p3 = subprocess.run([sys.executable,
                             os.path.join(HERE, "run_sweep.py"), "--dist-opt",
                             fake, "--fixtures", fix, "--only", "gpt2",
                             "bert", "llama", "resnet50_train",
                             "--allow-opaque",
                             "resnet50_train:BatchNormalization"],
                            capture_output=True, text=True)
        fixture_checks = [
            (p3.returncode == 1, "--fixtures exits 1 when bert fails"),
            (any(l.startswith("ok ") and "gpt2.onnx: imported" in l
                 for l in p3.stdout.splitlines()), "gpt2 passes"),
            (any(l.startswith("FAIL ") and "bert.onnx" in l and
                 "compute path: {'FancyOp': 1}" in l
                 for l in p3.stdout.splitlines()),
             "bert fails naming FancyOp on the compute path"),
            ("opaque shape/mask ops: {'Shape': 1}" in p3.stdout,
             "the integer-valued Shape is listed as shape/mask"),
            ("llama.onnx: imported" in p3.stdout,
             "graph-only llama imported with --dist-weights=ignore"),
            (any(l.startswith("ok ") and "gpt2.onnx: with " in l and
                 "--input-shape=input_ids:4x32" in l
                 for l in p3.stdout.splitlines()),
             "gpt2 pinned to batch 4 passes"),
            (any(l.startswith("FAIL ") and "bert.onnx: with " in l and
                 "do not all have leading dim 4" in l
                 for l in p3.stdout.splitlines()),
             "bert whose results ignore the pinned batch fails"),
            (any(l.startswith("ok ") and "resnet50_train.onnx: imported" in l
                 and "known importer gaps (allowed): "
                 "{'BatchNormalization': 1}" in l
                 for l in p3.stdout.splitlines()),
             "a KNOWN_OPAQUE op is allowed and listed"),
            ("6 passed, 2 failed" in p3.stdout, "fixture totals"),
        ]
        results += [(what, ok) for ok, what in checks + fixture_checks]
        failures = [what for what, ok in results if not ok]
        for what in failures:
            print("FAIL: " + what)
        if failures:
            print(out)
            print(p3.stdout, p3.stderr)
    if junit_out:
        root = ET.Element("testsuite", name="sweep-selftest",
                          tests=str(len(results)), failures=str(len(failures)))
        for what, ok in results:
            case = ET.SubElement(root, "testcase", classname="sweep-selftest",
                                 name=what)
            if not ok:
                ET.SubElement(case, "failure", message=what)
        ET.ElementTree(root).write(junit_out, encoding="utf-8",
                                   xml_declaration=True)
    print("%d passed, %d failed" % (len(results) - len(failures),
                                    len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
