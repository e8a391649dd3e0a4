//===- PlanResilience.cpp - Plans under preemptions -------------*- C++ -*-===//
//
// Part of DistOpt. The resilience options of dist-set-plan's simulation and
// dist-search-plan, checked once, and a plan's report under them
// (docs/resilience.md).
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/Planning.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

FailureOr<ResilienceChoice>
planning::resilienceChoice(ModuleOp module, const cluster::Cluster &cluster,
                           StringRef resilience, StringRef preemptions) {
  ResilienceChoice choice;
  std::optional<sim::Resilience> mode = sim::parseResilience(resilience);
  if (!mode)
    return emitError(module.getLoc())
           << "unknown --dist-resilience='" << resilience
           << "': expected none, checkpoint, redundant or elastic";
  choice.mode = *mode;
  if (!preemptions.empty()) {
    uint64_t seed;
    if (preemptions.getAsInteger(10, seed))
      return emitError(module.getLoc())
             << "bad --dist-preemptions='" << preemptions
             << "': expected a seed, a whole number such as 1";
    choice.seed = seed;
    if (!choice.enabled())
      return emitError(module.getLoc())
             << "--dist-preemptions injects preemptions into a plan that "
                "survives them: add --dist-resilience=checkpoint, "
                "=redundant or =elastic";
  }
  if (choice.enabled() && !cluster.availability)
    return emitError(module.getLoc())
           << "--dist-resilience=" << resilience
           << (choice.seed ? " and --dist-preemptions need" : " needs")
           << " the nodes' availability, and cluster '" << cluster.name
           << "' has none: add an 'availability:' section "
              "(preemptions_per_node_hour, replacement_s, "
              "on_demand_usd_per_node_hour, preemptible_usd_per_node_hour) "
              "to its YAML, or use a preset that has one (aws-p3-spot); see "
              "docs/resilience.md";
  return choice;
}

FailureOr<double> planning::survivorIterationTime(
    ModuleOp module, const cost::ModelDesc &model,
    const cluster::Cluster &cluster, const cost::CostModel &cm,
    const search::SearchOptions &so, const schedule::Plan &plan) {
  // The plan's devices but those of its last node: the cluster's first
  // devices, whole nodes first, as --dist-devices counts them.
  unsigned used = plan.numDevices();
  unsigned last = cluster.nodeOf(used - 1), survivors = used;
  while (survivors > 0 && cluster.nodeOf(survivors - 1) == last)
    --survivors;
  auto fail = [&]() {
    return emitError(module.getLoc())
           << "--dist-resilience=elastic: the plan uses " << used
           << " devices; after a preemption the job resumes on the "
           << survivors << " devices of the other nodes";
  };
  if (survivors == 0)
    return fail() << ", and there are none: plan over more than one node, "
                     "or use --dist-resilience=checkpoint";
  search::SearchOptions s;
  s.globalBatch = plan.globalBatch;
  s.memoryLimit = so.memoryLimit;
  s.memory = so.memory;
  s.input = so.input;
  s.planDefaults = so.planDefaults;
  s.expertSlots = so.expertSlots;
  s.expertFeatures = so.expertFeatures;
  s.devices = survivors;
  s.alternatives = 0;
  s.adviseDevices = false;
  llvm::Expected<search::SearchResult> r =
      search::searchPlan(model, cluster, cm, s);
  if (!r)
    return fail() << ", where no plan runs: " << llvm::toString(r.takeError())
                  << "; use --dist-resilience=checkpoint";
  return r->best.sim.result.iterationTime;
}

FailureOr<sim::ResilienceReport>
planning::planResilience(ModuleOp module, const search::Candidate &c,
                         const cluster::Cluster &cluster,
                         const ResilienceChoice &choice, double memoryLimit,
                         double survivorIterationTime) {
  sim::ResilienceInputs in = sim::resilienceInputs(c.sim, cluster, memoryLimit);
  if (choice.mode == sim::Resilience::Redundant && !in.redundantPossible)
    return emitError(module.getLoc())
           << "--dist-resilience=redundant: plan " << c.sim.plan.str() << ": "
           << in.redundantProblem;
  in.survivorIterationTime = survivorIterationTime;
  return sim::resilienceReport(in, *cluster.availability, choice.mode,
                               choice.seed);
}
