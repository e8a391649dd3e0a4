//===- NoiseScale.h - The gradient noise scale, measured --------*- C++ -*-===//
//
// Part of DistOpt. `--measure-noise-scale` of a training program compiled
// with gradient accumulation: the simple gradient noise scale
// B_noise = tr(Sigma) / |G|^2 of McCandlish et al. (2018), "An Empirical
// Model of Large-Batch Training", appendix A, from the gradient of each
// micro-batch (B_small rows) and of the step (B_big = K * B_small):
//
//   |G|^2    ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
//   tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1 / B_small - 1 / B_big)
//
// |G_small|^2 is the mean over the step's micro-batches of their squared
// gradient norms, |G_big|^2 the squared norm of the step's mean gradient.
// Both estimates are summed over the steps and B_noise is their ratio (the
// paper's advice: each alone is noisy, |G|^2 can come out negative).
//
// The gradients are read from the accumulators `<weight>.grad_acc` after
// each micro-batch (micro-batch k's is the difference to the sum before
// it). They hold the gradient times a factor (the loss scale over K) that
// is the same for every micro-batch of a step, and B_noise, a ratio of two
// quadratic forms of the gradients, does not change with it.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_NOISESCALE_H
#define DISTRT_GEN_NOISESCALE_H

#include "distrt/gen/Program.h"

#include <string>
#include <vector>

namespace dg {

class NoiseScale {
public:
  /// Before the first micro-batch of a step.
  void beginStep() {
    smallSum = 0;
    micro = 0;
    for (std::vector<double> &b : before)
      std::fill(b.begin(), b.end(), 0.0);
  }

  /// After micro-batch k of the step: reads every accumulator.
  int afterMicrobatch(Program &P) {
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

  /// After the step's last micro-batch (before the update): micro-batches
  /// of \p rows samples each.
  void endStep(int64_t rows) {
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

  /// The result on \p out (one line a script can read) and how to use it
  /// on stderr; an error (in \p err) when the steps do not give one.
  int print(FILE *out, Error &err) const {
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
      return fail(
          err,
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

private:
  static bool isAccumulator(const Program::Persistent &b) {
    const std::string suffix = ".grad_acc";
    return b.name.size() > suffix.size() &&
           b.name.compare(b.name.size() - suffix.size(), suffix.size(),
                          suffix) == 0;
  }
  static size_t elements(const Program::Persistent &b) {
    size_t n = 1;
    for (int i = 0; i < b.rank; ++i)
      n *= (size_t)b.dims[i];
    return n;
  }

  /// Each accumulator's value after the last micro-batch, in order.
  std::vector<std::vector<double>> before;
  std::vector<float> host;
  double smallSum = 0, signal = 0, noise = 0, smallTotal = 0, spread = 0;
  int micro = 0, microbatches = 0;
  long long steps = 0;
  int64_t samples = 0;
};

} // namespace dg

#endif // DISTRT_GEN_NOISESCALE_H
