//===- SearchTestUtil.h - Models shared by the search tests -----*- C++ -*-===//

#ifndef DISTOPT_TEST_UNIT_SEARCH_SEARCHTESTUTIL_H
#define DISTOPT_TEST_UNIT_SEARCH_SEARCHTESTUTIL_H

#include "lib/Cost/ModelDesc.h"
#include "lib/Search/Search.h"

#include "gtest/gtest.h"

namespace distopt::search::test {

/// A GPT of \p layers blocks of width \p hidden, 16 heads, sequence 1024.
inline cost::ModelDesc smallGpt(unsigned layers, double hidden) {
  cost::GptConfig g;
  g.layers = layers;
  g.hidden = hidden;
  g.heads = 16;
  g.seqLen = 1024;
  g.vocab = 32000;
  return cost::buildGpt(g);
}

/// The search's lower bound of plan \p spec is at most its simulated
/// iteration time, and not uselessly loose.
inline void expectBoundBelowSimulation(const cost::ModelDesc &model,
                                       const cluster::Cluster &c,
                                       const char *spec, unsigned batch) {
  cost::CostModel cm;
  schedule::Plan p = llvm::cantFail(schedule::parsePlan(spec));
  sim::SimOptions so;
  so.recordEvents = false;
  sim::PlanSimulation ps =
      llvm::cantFail(sim::simulatePlan(model, c, p, batch, cm, so));
  double lb = iterationLowerBound(ps.costs, ps.plan.schedule,
                                  ps.plan.overlapGradSync);
  EXPECT_LE(lb, ps.result.iterationTime * (1 + 1e-9)) << spec;
  EXPECT_GT(lb, 0.5 * ps.result.iterationTime) << spec << " (loose)";
}

} // namespace distopt::search::test

#endif // DISTOPT_TEST_UNIT_SEARCH_SEARCHTESTUTIL_H
