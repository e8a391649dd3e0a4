#!/usr/bin/env bash
# Runs every DistOpt test suite: unit tests (gtest, via CTest), the lit
# regression tests, the ONNX backend-test import sweep and the numerical
# suites. Installs missing packages and builds first. Ends with one summary
# line: "N passed, N failed, N skipped".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DIST_BUILD_DIR:-$root/build}
results=$build/test-results
cd "$root"

"$root/scripts/install-deps.sh" || { echo "error: installing packages failed"; exit 1; }
"$root/scripts/build.sh" "$build" all || { echo "error: the build failed"; exit 1; }
rm -rf "$results" && mkdir -p "$results"

status=0
echo "== unit tests (gtest)"
# Each gtest binary writes its own per-case XML, so the summary counts test
# cases rather than binaries.
for exe in "$build"/unittests/*; do
  [ -x "$exe" ] || continue
  name=$(basename "$exe")
  "$exe" --gtest_brief=1 --gtest_output="xml:$results/unit-$name.xml" || {
    echo "FAILED: $name"; status=1; }
done

echo "== lit regression tests"
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$results/lit.xml" \
  "$build/test" || status=1

echo "== Python test environment (.venv from requirements-test.txt)"
venv=$root/.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" || { echo "error: cannot create $venv (install python3-venv)"; exit 1; }
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r "$root/requirements-test.txt" ||
  { echo "error: pip could not install requirements-test.txt"; exit 1; }

echo "== PyTorch module environment (.venv-fixtures: Debian's python3-torch + requirements-fixtures.txt)"
fixtures_venv=$root/.venv-fixtures
if [ ! -x "$fixtures_venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$fixtures_venv" ||
    { echo "error: cannot create $fixtures_venv (install python3-venv)"; exit 1; }
fi
"$fixtures_venv/bin/pip" install -q --disable-pip-version-check -r "$root/requirements-fixtures.txt" ||
  { echo "error: pip could not install requirements-fixtures.txt"; exit 1; }

echo "== sweep harness self-test"
python3 "$root/test/sweep/selftest.py" --junit "$results/sweep-selftest.xml" || status=1

echo "== fixtures: checker, onnxruntime, graph-only convention, bad-file defects"
"$venv/bin/python" "$root/test/fixtures/check_fixtures.py" --junit "$results/fixtures.xml" || status=1

echo "== real networks import with no opaque ops in their compute path"
python3 "$root/test/sweep/run_sweep.py" --dist-opt "$build/bin/dist-opt" --fixtures \
  --junit "$results/fixtures-import.xml" || status=1

echo "== ONNX backend test-data import sweep (libonnx-testdata)"
python3 "$root/test/sweep/run_sweep.py" --dist-opt "$build/bin/dist-opt" \
  --junit "$results/sweep.xml" || status=1

echo "== generated programs vs ONNX backend node tests (libonnx-testdata)"
"$venv/bin/python" "$root/test/numerics/run_node_tests.py" --build "$build" \
  --junit "$results/numerics-nodes.xml" || status=1

echo "== whole networks vs onnxruntime (GPT-2, BERT, LLaMA, ResNet)"
"$venv/bin/python" "$root/test/numerics/run_networks.py" --build "$build" \
  --junit "$results/numerics-networks.xml" || status=1

echo "== training: MLP, GPT-2, ResNet vs NumPy, PyTorch and finite differences"
"$venv/bin/python" "$root/test/numerics/run_training.py" --build "$build" \
  --junit "$results/numerics-training.xml" || status=1

echo "== training vs the PyTorch modules (LLaMA, Mistral, Whisper, BERT, ViT from transformers)"
DIST_TORCH_PYTHON="$fixtures_venv/bin/python" "$venv/bin/python" "$root/test/numerics/run_modules.py" \
  --build "$build" --junit "$results/numerics-modules.xml" || status=1

echo "== data-parallel training: mpirun -np 2 vs one process (MLP, GPT-2)"
"$venv/bin/python" "$root/test/numerics/run_distributed.py" --build "$build" \
  --junit "$results/numerics-distributed.xml" || status=1

python3 "$root/scripts/summarize_tests.py" "$results"/*.xml || status=1
exit $status
