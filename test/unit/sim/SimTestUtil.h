//===- SimTestUtil.h - Hand-made pipeline costs for tests -------*- C++ -*-===//

#ifndef DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H
#define DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H

#include "lib/Schedule/Plan.h"

namespace distopt::sim::test {

/// Every virtual stage: F, BI and W seconds; sends take \p send seconds on
/// the network; no optimizer, no DP sync.
inline schedule::PipelineCosts uniform(unsigned pp, unsigned chunks, unsigned m,
                                       double f, double bi, double bw,
                                       double send = 0) {
  return schedule::uniformPipelineCosts(pp, chunks, m, f, bi, bw, send);
}

} // namespace distopt::sim::test

#endif // DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H
