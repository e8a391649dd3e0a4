//===- PublishedTable.h - Predicted vs published LLM throughput -*- C++ -*-===//

#ifndef DISTOPT_BENCH_SIM_PUBLISHEDTABLE_H
#define DISTOPT_BENCH_SIM_PUBLISHEDTABLE_H

#include "bench/sim/PublishedRows.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace distopt::bench {

/// Relative errors of the accuracy table, per source.
struct AccuracySummary {
  static constexpr unsigned kSources = 5;
  double sumAbs[kSources] = {}, worstAbs[kSources] = {};
  unsigned n[kSources] = {};
  double memorySumAbs = 0, memoryWorst = 0;
  unsigned memoryRows = 0, failed = 0;

  void add(Source s, double err) {
    unsigned i = static_cast<unsigned>(s);
    sumAbs[i] += std::fabs(err);
    worstAbs[i] = std::max(worstAbs[i], std::fabs(err));
    n[i]++;
  }
  void addMemory(double err) {
    memorySumAbs += std::fabs(err);
    memoryWorst = std::max(memoryWorst, std::fabs(err));
    memoryRows++;
  }
  unsigned count(Source s) const { return n[static_cast<unsigned>(s)]; }
  double meanAbs(Source s) const {
    unsigned i = static_cast<unsigned>(s);
    return n[i] ? sumAbs[i] / n[i] : 0;
  }
  double worst(Source s) const { return worstAbs[static_cast<unsigned>(s)]; }
  double memoryMeanAbs() const {
    return memoryRows ? memorySumAbs / memoryRows : 0;
  }
};

/// Simulates every row of kLlmRows; prints the table when \p print.
AccuracySummary publishedTable(bool print);
/// The rows the H100 constants are calibrated on: NeMo and Megatron-Bridge
/// dense models (MoE rows and torchtitan's are predicted, never fitted).
bool isCalibrationRow(const LlmRow &r);
/// Leave-one-out check of the H100 calibration (fp8 matmul and attention
/// efficiency) over the calibration rows.
void publishedHeldOut();

} // namespace distopt::bench

#endif // DISTOPT_BENCH_SIM_PUBLISHEDTABLE_H
