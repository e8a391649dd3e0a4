//===- Evaluate.cpp - One plan, evaluated as the search does -----*- C++ -*-===//
//
// Part of DistOpt. `dist-simulate` predicts the plan a module carries with
// the very evaluation the search gave it, so that simulating a searched
// plan again reports what the search reported.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

using namespace llvm;
using namespace distopt;
using namespace distopt::search;

Expected<Candidate> search::evaluatePlan(const cost::ModelDesc &model,
                                         const cluster::Cluster &c,
                                         const cost::CostModel &cm,
                                         const schedule::Plan &plan,
                                         const SearchOptions &o,
                                         const schedule::Schedule *given) {
  if (plan.mode == Mode::Infer) {
    SearchOptions io = o;
    io.objective = plan.objective;
    return detail::evaluateInference(model, c, cm, plan, io);
  }
  sim::SimOptions so;
  so.input = o.input;
  Expected<sim::PlanSimulation> ps = sim::simulatePlan(
      model, c, plan, plan.globalBatch, cm, so, o.memory, given);
  if (!ps)
    return ps.takeError();
  Candidate cand;
  cand.sim = std::move(*ps);
  cand.breakdown = breakdownOf(cand.sim);
  cand.lowerBound = iterationLowerBound(cand.sim.costs, cand.sim.plan.schedule,
                                        cand.sim.plan.overlapGradSync);
  detail::Tables t(model, c, cm, o.memory);
  cand.replicaMicrobatches =
      detail::replicaShares(t, cand.sim.plan, c, model.layers.size());
  return cand;
}
