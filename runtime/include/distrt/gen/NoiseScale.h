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
  void beginStep();

  /// After micro-batch k of the step: reads every accumulator.
  int afterMicrobatch(Program &P);

  /// After the step's last micro-batch (before the update): micro-batches
  /// of \p rows samples each.
  void endStep(int64_t rows);

  /// The result on \p out (one line a script can read) and how to use it
  /// on stderr; an error (in \p err) when the steps do not give one.
  int print(FILE *out, Error &err) const;

private:
  static bool isAccumulator(const Program::Persistent &b);
  static size_t elements(const Program::Persistent &b);

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
