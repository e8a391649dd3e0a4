//===- SimTestUtil.h - Hand-made pipeline costs for tests -------*- C++ -*-===//

#ifndef DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H
#define DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H

#include "lib/Cost/ModelDesc.h"
#include "lib/Schedule/Plan.h"

namespace distopt::sim::test {

/// Every virtual stage: F, BI and W seconds; sends take \p send seconds on
/// the network; no optimizer, no DP sync.
inline schedule::PipelineCosts uniform(unsigned pp, unsigned chunks, unsigned m,
                                       double f, double bi, double bw,
                                       double send = 0) {
  return schedule::uniformPipelineCosts(pp, chunks, m, f, bi, bw, send);
}

/// A GPT of \p layers blocks, hidden 1024, 16 heads, sequence 1024.
inline cost::ModelDesc gpt(unsigned layers) {
  cost::GptConfig g;
  g.layers = layers;
  g.hidden = 1024;
  g.heads = 16;
  g.seqLen = 1024;
  g.vocab = 32000;
  return cost::buildGpt(g);
}

} // namespace distopt::sim::test

#endif // DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H
