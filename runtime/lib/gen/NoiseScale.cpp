//===- NoiseScale.cpp - The gradient noise scale, measured ----------------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/NoiseScale.h says what is measured and how).
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/NoiseScale.h"

#include <algorithm>

namespace dg {

void NoiseScale::beginStep() {
  smallSum = 0;
  micro = 0;
  for (std::vector<double> &b : before)
    std::fill(b.begin(), b.end(), 0.0);
}

int NoiseScale::afterMicrobatch(Program &P) {
  double norm = 0;
  size_t k = 0;
  for (Program::Persistent &b : P.persistent) {
    if (!isAccumulator(b))
      continue;
    if (b.dtype != F32)
      return fail(P.err,
                  "--measure-noise-scale: the accumulator '%s' is %s; "
                  "gradient sums are f32",
                  b.name.c_str(), dtypeInfo(b.dtype).name);
    size_t n = elements(b);
    if (k == before.size())
      before.emplace_back(n, 0.0);
    host.resize(n);
    if (P.download(host.data(), b.ptr, n * sizeof(float)))
      return 1;
    std::vector<double> &last = before[k++];
    for (size_t i = 0; i < n; ++i) {
      double d = (double)host[i] - last[i];
      norm += d * d;
      last[i] = host[i];
    }
  }
  if (k == 0)
    return fail(P.err, "--measure-noise-scale: the program keeps no gradient "
                       "accumulators ('<weight>.grad_acc'); compile it with "
                       "--train=\"... accumulation-steps=K\" (K >= 2)");
  smallSum += norm;
  ++micro;
  return 0;
}

void NoiseScale::endStep(int64_t rows) {
  double big = 0;
  for (const std::vector<double> &acc : before)
    for (double x : acc)
      big += (x / micro) * (x / micro);
  double small = smallSum / micro;
  double bSmall = (double)rows, bBig = (double)rows * micro;
  signal += (bBig * big - bSmall * small) / (bBig - bSmall);
  noise += (small - big) / (1 / bSmall - 1 / bBig);
  smallTotal += small;
  spread += small - big;
  ++steps;
  microbatches = micro;
  samples = rows;
}

int NoiseScale::print(FILE *out, Error &err) const {
  if (steps == 0)
    return 0;
  // f32 accumulators: differences of micro-batch gradients below this
  // share of their norm are rounding.
  if (!(spread > 1e-5 * smallTotal))
    return fail(err,
                "--measure-noise-scale: over %lld step(s) of %d "
                "micro-batches of %lld samples the micro-batches' gradients "
                "differ by no more than rounding: no noise to measure; give "
                "each micro-batch its own rows (an input file with %d times "
                "the compiled rows)",
                steps, microbatches, (long long)samples, microbatches);
  if (!(signal > 0))
    return fail(err,
                "--measure-noise-scale: over %lld step(s) of %d "
                "micro-batches of %lld samples the estimate of the gradient's "
                "squared norm is not positive (%.4g; tr(Sigma) %.4g): the "
                "noise drowns it; measure over more steps (--steps) or with "
                "more micro-batches a step",
                steps, microbatches, (long long)samples, signal / steps,
                noise / steps);
  fprintf(out,
          "noise scale %.6g samples (|G|^2 %.6g, tr(Sigma) %.6g, from %lld "
          "step(s) of %d micro-batches of %lld samples)\n",
          noise / signal, signal / steps, noise / steps, steps, microbatches,
          (long long)samples);
  fprintf(stderr,
          "note: plan with it: dist-opt ... --dist-objective="
          "time-to-accuracy --dist-noise-scale=%.6g\n",
          noise / signal);
  return 0;
}

bool NoiseScale::isAccumulator(const Program::Persistent &b) {
  const std::string suffix = ".grad_acc";
  return b.name.size() > suffix.size() &&
         b.name.compare(b.name.size() - suffix.size(), suffix.size(), suffix) ==
             0;
}

size_t NoiseScale::elements(const Program::Persistent &b) {
  size_t n = 1;
  for (int i = 0; i < b.rank; ++i)
    n *= (size_t)b.dims[i];
  return n;
}

} // namespace dg
