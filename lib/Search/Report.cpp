//===- Report.cpp - The figures of a plan's reports, and the JSON -*- C++ -*-=//
//
// Part of DistOpt. Gathers a Report from an evaluated plan or a search and
// writes it as the JSON report (docs/report-format.md); HtmlReport.cpp
// writes the same Report as a page.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/Report.h"

using namespace llvm;
using namespace distopt;
using namespace distopt::search;

CandidateReport search::candidateReport(const Candidate &c,
                                        const cost::ModelDesc &model) {
  CandidateReport r;
  r.sim = sim::planReport(c.sim.plan, model, c.sim.costs, c.sim.result);
  const schedule::Plan &p = c.sim.plan;
  r.mode = p.mode;
  r.label = planLabel(p, p.mode != Mode::Infer);
  r.breakdown = c.breakdown;
  r.lowerBound = c.lowerBound;
  r.latency = c.latency;
  r.streamThroughput = c.streamThroughput;
  for (auto [l, d] : llvm::enumerate(c.sim.costs.devices))
    if (!p.replicated() || l == p.firstSlot(c.sim.costs.stageOfList(l)))
      r.stageDeviceKinds.push_back(d.deviceName);
  // Round-robin shares of replicated plans are in the lists.
  bool uneven = false;
  for (const std::vector<unsigned> &rank : c.replicaMicrobatches)
    for (unsigned k : rank)
      uneven |= k != rank.front();
  if (uneven && !p.replicated())
    r.replicaMicrobatches = c.replicaMicrobatches;
  return r;
}

Report search::planReport(const Candidate &c, const cost::ModelDesc &model,
                          const cluster::Cluster &cluster) {
  Report r;
  r.model = model.name;
  r.modelParams = model.paramCount();
  r.cluster = cluster.name;
  r.clusterDevices = cluster.numDevices();
  for (unsigned rank = 0;
       rank < c.sim.plan.numDevices() && rank < cluster.numDevices(); ++rank)
    r.deviceKinds.push_back(cluster.deviceOf(rank).name);
  r.chosen = candidateReport(c, model);
  r.mode = c.sim.plan.mode;
  r.objective = c.sim.plan.objective;
  return r;
}

Report search::searchReport(const SearchResult &res,
                            const cost::ModelDesc &model,
                            const cluster::Cluster &cluster) {
  Report r = planReport(res.best, model, cluster);
  r.searched = true;
  r.mode = res.mode;
  r.objective = res.objective;
  r.stats = res.stats;
  r.devicesUsed = res.devicesUsed;
  r.devicesTotal = res.devicesTotal;
  r.suggestedDevices = res.suggestedDevices;
  r.efficiency = res.efficiency;
  r.scaling = res.scaling;
  for (const Candidate &c : res.alternatives)
    r.alternatives.push_back(candidateReport(c, model));
  r.rankedBy = rankedBy(res);
  r.why = whyBest(res);
  r.pinned = res.pinned;
  return r;
}

json::Value search::toJSON(const CandidateReport &r) {
  json::Value v = sim::toJSON(r.sim);
  json::Object *o = v.getAsObject();
  o->erase("model");
  if (r.mode == Mode::Infer) {
    if (json::Object *est = o->getObject("estimate")) {
      est->erase("iteration_time_s");
      est->erase("tflops_per_device");
      est->erase("model_tflops_per_device");
      est->erase("steady_state");
      est->erase("in_flight_microbatches");
      est->erase("bytes_per_link_level");
      (*est)["latency_s"] = r.latency;
      (*est)["stream_samples_per_s"] = r.streamThroughput;
    }
    if (json::Object *plan = o->getObject("plan")) {
      plan->erase("recompute");
      plan->erase("zero");
      plan->erase("chunks");
      (*plan)["schedule"] = "forward-stream";
    }
  }
  json::Object *plan = o->getObject("plan");
  json::Array kinds;
  for (const std::string &k : r.stageDeviceKinds)
    kinds.push_back(k);
  (*plan)["stage_device_kinds"] = std::move(kinds);
  if (!r.replicaMicrobatches.empty()) {
    json::Array shares;
    for (const std::vector<unsigned> &rank : r.replicaMicrobatches) {
      json::Array a;
      for (unsigned k : rank)
        a.push_back(k);
      shares.push_back(std::move(a));
    }
    (*plan)["replica_microbatches"] = std::move(shares);
  }
  const Breakdown &b = r.breakdown;
  (*o)["breakdown"] = json::Object{
      {"compute_s", b.compute},      {"p2p_s", b.p2p},
      {"dp_sync_s", b.dpSync},       {"bubble_s", b.bubble},
      {"data_stall_s", b.dataStall}, {"lower_bound_s", r.lowerBound}};
  return v;
}

json::Value search::toJSON(const Report &r) {
  json::Value v = toJSON(r.chosen);
  json::Object *o = v.getAsObject();
  (*o)["model_params"] = r.modelParams;
  if (r.resilience)
    (*o)["resilience"] = sim::toJSON(*r.resilience);
  if (r.replan)
    (*o)["replan"] = sim::toJSON(*r.replan);
  if (!r.searched)
    return v;
  (*o)["model"] = r.model;
  (*o)["mode"] = r.mode == Mode::Train ? "train" : "infer";
  if (r.mode == Mode::Infer)
    (*o)["objective"] =
        r.objective == InferObjective::Latency ? "latency" : "throughput";
  const SearchStats &s = r.stats;
  (*o)["search"] = json::Object{{"time_s", s.seconds},
                                {"cpu_time_s", s.cpuSeconds},
                                {"candidates", int64_t(s.candidates)},
                                {"simulated", int64_t(s.simulated)},
                                {"partitions", int64_t(s.partitions)},
                                {"pruned_memory", int64_t(s.memoryPruned)},
                                {"pruned_bound", int64_t(s.boundPruned)},
                                {"dominated", int64_t(s.dominated)},
                                {"replicated", int64_t(s.replicated)},
                                {"pruned_pin", int64_t(s.pinPruned)},
                                {"exact", s.exact},
                                {"gap", s.gap}};
  json::Object devices{{"used", int64_t(r.devicesUsed)},
                       {"total", int64_t(r.devicesTotal)}};
  if (r.suggestedDevices) {
    devices["suggested"] = int64_t(r.suggestedDevices);
    devices["parallel_efficiency"] = r.efficiency;
    json::Array scaling;
    for (auto &[k, t] : r.scaling)
      scaling.push_back(json::Object{{"devices", int64_t(k)}, {"time_s", t}});
    devices["best_time_by_devices"] = std::move(scaling);
  }
  (*o)["devices"] = std::move(devices);
  if (!r.pinned.empty()) {
    auto ranges = [](llvm::ArrayRef<std::pair<unsigned, unsigned>> rs) {
      json::Array a;
      for (auto [first, last] : rs)
        a.push_back(json::Array{int64_t(first), int64_t(last)});
      return a;
    };
    json::Array sides;
    for (const PinnedSide &s : r.pinned)
      sides.push_back(
          json::Object{{"device_kind", s.kind},
                       {"pinned_layers", ranges(s.pinned)},
                       {"layers", ranges(s.layers)},
                       {"link_bytes_per_iteration", s.linkBytes},
                       {"peak_memory_bytes", s.peakMemory},
                       {"memory_capacity_bytes", s.memoryCapacity}});
    (*o)["pinned"] = std::move(sides);
  }
  json::Array alts;
  for (const CandidateReport &c : r.alternatives)
    alts.push_back(toJSON(c));
  (*o)["alternatives"] = std::move(alts);
  if (r.baseline) {
    json::Value b = toJSON(*r.baseline);
    (*b.getAsObject())["source"] = r.baselineSource;
    (*o)["baseline"] = std::move(b);
  }
  return v;
}
