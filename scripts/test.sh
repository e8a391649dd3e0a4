#!/usr/bin/env bash
# Runs every DistOpt test suite: unit tests (gtest, via CTest), the lit
# regression tests, the ONNX backend-test import sweep, the fuzz regression
# corpus and a short fuzz run, and the numerical suites (under oneDNN's AVX2
# kernels and the machine's own ISA). Installs missing packages and builds
# first. Ends with one summary line: "N passed, N failed, N skipped".
# --sanitize runs the import, verifier and fuzz suites under ASan + UBSan
# instead (a second build, build-sanitize).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DIST_BUILD_DIR:-$root/build}
results=$build/test-results
cd "$root"

"$root/scripts/install-deps.sh" || { echo "error: installing packages failed"; exit 1; }

# scripts/test.sh --sanitize: the import, verifier, driver and fuzz suites
# under AddressSanitizer + UBSan, in a build of their own (build-sanitize,
# -DDIST_SANITIZE=address,undefined; docs/reliability.md). MLIR, LLVM and
# ONNX are not instrumented, so ASan runs with allow_user_poisoning=0, and
# their start-up registries are not leaks (detect_leaks=0).
if [ "${1:-}" = --sanitize ]; then
  san=${DIST_SANITIZE_BUILD_DIR:-$root/build-sanitize}
  results=$san/test-results
  if [ ! -f "$san/build.ninja" ]; then
    cmake -G Ninja -S "$root" -B "$san" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=${CC:-gcc} -DCMAKE_CXX_COMPILER=${CXX:-g++} \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DLLVM_USE_LINKER=lld -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
      -DDIST_SANITIZE=address,undefined -DDIST_ENABLE_CUDA=OFF >/dev/null ||
      { echo "error: configuring $san failed"; exit 1; }
  fi
  ninja -C "$san" dist-opt dist-compile dist-fuzz dist-modelgen || { echo "error: the build failed"; exit 1; }
  rm -rf "$results" && mkdir -p "$results"
  export ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  status=0
  echo "== [sanitizers] import, verifier, driver and fuzz lit suites"
  /usr/lib/llvm-22/bin/lit -sv \
    --xunit-xml-output "$results/lit-sanitize.xml" \
    "$san/test/import" "$san/test/dialects" "$san/test/passes" \
    "$san/test/driver" "$san/test/fuzz" || status=1
  echo "== [sanitizers] fuzz: regression corpus and 30 s of mutated inputs"
  for t in onnx mlir cluster npy megatron; do
    seeds=()
    [ $t = onnx ] && seeds=(--seeds "$root/test/fixtures/small" --seeds "$root/test/import/Inputs")
    [ $t = mlir ] && seeds=(--seeds "$root/test/dialects" --seeds "$root/test/passes" --seeds "$root/test/partition")
    "$san/bin/dist-fuzz" $t --regress "$root/test/fuzz/regress/$t" --seconds 8 \
      --crash-dir "$results/fuzz-crashes" --junit "$results/fuzz-$t.xml" "${seeds[@]}" ||
      { echo "FAILED: dist-fuzz $t under sanitizers"; status=1; }
  done
  python3 "$root/scripts/summarize_tests.py" "$results"/*.xml || status=1
  exit $status
fi

"$root/scripts/build.sh" "$build" all || { echo "error: the build failed"; exit 1; }
rm -rf "$results" && mkdir -p "$results"

status=0
# died NAME WHAT: a suite that ended without writing $results/NAME.xml (a
# crash, a missing tool) counts as one failure in the closing line.
died() {
  [ -f "$results/$1.xml" ] && return
  python3 - "$results/$1.xml" "$1" "$2" <<'EOF'
import sys
from xml.sax.saxutils import quoteattr
path, name, what = sys.argv[1:]
with open(path, "w") as f:
    f.write(f'<testsuite name={quoteattr(name)} tests="1" failures="1">'
            f'<testcase classname={quoteattr(name)} name="run">'
            f'<failure message={quoteattr(what)}/></testcase></testsuite>\n')
EOF
}

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
# DeepSpeed's config parser, against Debian's torch (no torch from PyPI).
"$fixtures_venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation \
  -r "$root/requirements-deepspeed.txt" ||
  { echo "error: pip could not install requirements-deepspeed.txt"; exit 1; }

echo "== --dist-export=deepspeed configs load in DeepSpeed's own parser"
"$fixtures_venv/bin/python" "$root/test/driver/deepspeed_config.py" --build "$build" \
  --junit "$results/deepspeed-config.xml" || status=1

echo "== dist-modelgen's mixture-of-experts form in onnxruntime vs NumPy"
"$venv/bin/python" "$root/test/numerics/check_moe_form.py" --build "$build" \
  --junit "$results/moe-form.xml" || status=1

echo "== dist-modelgen's multi-head latent attention in onnxruntime vs NumPy"
"$venv/bin/python" "$root/test/numerics/check_mla_form.py" --build "$build" \
  --junit "$results/mla-form.xml" || status=1

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

echo "== fuzz: regression corpus and a short mutation run of every target"
# Every input that ever crashed (test/fuzz/regress), then ~45 s of mutated
# inputs seeded from the fixtures and lit inputs (docs/reliability.md).
# A crashing or hanging input is saved under $results/fuzz-crashes.
fuzz() {
  "$build/bin/dist-fuzz" "$1" --regress "$root/test/fuzz/regress/$1" --seconds "$2" \
    --crash-dir "$results/fuzz-crashes" --junit "$results/fuzz-$1.xml" "${@:3}" || {
    echo "FAILED: dist-fuzz $1 (input saved under $results/fuzz-crashes)"; status=1
    died "fuzz-$1" "dist-fuzz $1 ended without its results (a crash: the input is under fuzz-crashes)"; }
}
fuzz onnx 15 --seeds "$root/test/fixtures/small" --seeds "$root/test/import/Inputs"
fuzz mlir 15 --seeds "$root/test/dialects" --seeds "$root/test/passes" \
  --seeds "$root/test/distributed" --seeds "$root/test/codegen" --seeds "$root/test/partition"
fuzz cluster 10 --seeds "$root/test/driver/Inputs"
fuzz npy 5
fuzz megatron 5 --seeds "$root/test/driver/Inputs"

# The numerical suites run under oneDNN's AVX2 kernels and under the
# machine's own ISA: kernels of another ISA (AVX-512, AMX) round
# differently, and the suites must hold for any x86-64 CPU. Where the
# machine's own ISA is AVX2 the two runs are the same run, done once.
isas=(AVX2)
if grep -qwE 'avx512f|amx_tile' /proc/cpuinfo 2>/dev/null; then
  isas+=(native)
else
  echo "== (this CPU's own oneDNN ISA is AVX2: one numerics run covers both)"
fi
# numerics TITLE SCRIPT TAG: one numerical suite under the current $isa.
numerics() {
  echo "== [$isa] $1"
  "$venv/bin/python" "$root/test/numerics/$2.py" --build "$build" \
    --junit "$results/numerics-$3-$tag.xml" || {
    status=1; died "numerics-$3-$tag" "$2.py ended without its results"; }
}
# The suites compile the same programs under either ISA (oneDNN picks its
# kernels as a program runs): with fixed work folders the program cache
# builds each once.
export DIST_COMPILE_CACHE=$build/program-cache DIST_NUMERICS_WORK=$build/numerics-work
rm -rf "$DIST_COMPILE_CACHE" "$DIST_NUMERICS_WORK"
for isa in "${isas[@]}"; do
  if [ "$isa" = native ]; then unset DNNL_MAX_CPU_ISA; else export DNNL_MAX_CPU_ISA=$isa; fi
  tag=$(echo "$isa" | tr 'A-Z' 'a-z')
  numerics "generated programs vs ONNX backend node tests (libonnx-testdata)" \
    run_node_tests nodes
  numerics "whole networks vs onnxruntime (GPT-2, BERT, LLaMA, ResNet)" \
    run_networks networks
  numerics "training: MLP, GPT-2, ResNet vs NumPy, PyTorch and finite differences" \
    run_training training
  DIST_TORCH_PYTHON="$fixtures_venv/bin/python" numerics \
    "training vs the PyTorch modules (LLaMA, Mistral, Whisper, BERT, ViT from transformers)" \
    run_modules modules
  numerics "data-parallel training: mpirun -np 2 vs one process (MLP, GPT-2)" \
    run_distributed distributed
done
unset DNNL_MAX_CPU_ISA
rm -rf "$DIST_COMPILE_CACHE" "$DIST_NUMERICS_WORK"

python3 "$root/scripts/summarize_tests.py" "$results"/*.xml || status=1
exit $status
