//===- Resilience.cpp - Plans on preemptible nodes --------------*- C++ -*-===//
//
// Part of DistOpt. The closed forms and the injection of docs/resilience.md.
//
//===----------------------------------------------------------------------===//

#include "lib/Sim/Resilience.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace llvm;

namespace distopt::sim {

StringRef resilienceName(Resilience r) {
  switch (r) {
  case Resilience::None:
    return "none";
  case Resilience::Checkpoint:
    return "checkpoint";
  case Resilience::Redundant:
    return "redundant";
  case Resilience::Elastic:
    return "elastic";
  }
  return "none";
}

std::optional<Resilience> parseResilience(StringRef s) {
  return StringSwitch<std::optional<Resilience>>(s)
      .Case("none", Resilience::None)
      .Case("checkpoint", Resilience::Checkpoint)
      .Case("redundant", Resilience::Redundant)
      .Case("elastic", Resilience::Elastic)
      .Default(std::nullopt);
}

double dalyInterval(double c, double mtbf) {
  if (!(c > 0))
    return 0;
  if (c >= 2 * mtbf)
    return mtbf;
  double young = std::sqrt(2 * c * mtbf);
  return young * (1 + std::sqrt(c / (2 * mtbf)) / 3 + c / (18 * mtbf)) - c;
}

/// Fraction of wall-clock time that makes progress with a checkpoint of
/// \p c seconds after every \p tau seconds of work, restarts of \p r
/// seconds and exponentially distributed failures of mean \p mtbf (Daly
/// 2006, eq. 20: wall / work = M e^{R/M} (e^{(tau + C)/M} - 1) / tau).
static double checkpointFraction(double mtbf, double c, double r, double tau) {
  if (!std::isfinite(mtbf))
    return tau > 0 ? tau / (tau + c) : 1;
  double wallPerWork =
      mtbf * std::exp(r / mtbf) * std::expm1((tau + c) / mtbf) / tau;
  return 1 / wallPerWork;
}

ResilienceInputs resilienceInputs(const PlanSimulation &ps,
                                  const cluster::Cluster &cluster,
                                  double memoryLimit) {
  const schedule::Plan &plan = ps.plan;
  const schedule::PipelineCosts &costs = ps.costs;
  const SimResult &r = ps.result;
  ResilienceInputs in;
  in.iterationTime = r.iterationTime;
  in.samplesPerIteration = plan.globalBatch;

  // The nodes the plan uses, numbered densely in the order of the devices.
  std::map<unsigned, unsigned> nodeIndex;
  std::map<unsigned, unsigned> devicesOn;
  unsigned used = plan.numDevices();
  for (unsigned d = 0; d < used; ++d) {
    unsigned node = cluster.nodeOf(d);
    nodeIndex.try_emplace(node, nodeIndex.size());
    ++devicesOn[node];
  }
  in.nodes = std::max<size_t>(1, nodeIndex.size());
  in.devicesPerNode = 1;
  for (auto &[node, n] : devicesOn)
    in.devicesPerNode = std::max(in.devicesPerNode, n);
  for (const schedule::DeviceCost &dc : costs.devices)
    in.stateBytesPerDevice =
        std::max(in.stateBytesPerDevice,
                 dc.staticMemory.weights + dc.staticMemory.optimizer);

  // The nodes of pipeline rank p's stage group in data-parallel replica d.
  auto nodesOf = [&](unsigned p, unsigned d) {
    std::set<unsigned> nodes;
    for (unsigned k = 0; k < plan.cp; ++k)
      for (unsigned t = 0; t < plan.tp; ++t)
        nodes.insert(nodeIndex[cluster.nodeOf(plan.globalRank(p, d, t, k))]);
    return nodes;
  };
  std::vector<std::set<unsigned>> neighbours(in.nodes);
  bool sharesNode = false;
  unsigned pp = plan.pp;
  if (pp >= 2 && !plan.replicated()) {
    for (unsigned d = 0; d < plan.dp; ++d)
      for (unsigned p = 0; p < pp; ++p) {
        std::set<unsigned> a = nodesOf(p, d), b = nodesOf((p + 1) % pp, d);
        for (unsigned x : a)
          for (unsigned y : b) {
            if (x == y)
              sharesNode = true;
            else {
              neighbours[x].insert(y);
              neighbours[y].insert(x);
            }
          }
      }
  }
  for (const std::set<unsigned> &n : neighbours)
    in.neighbours.emplace_back(n.begin(), n.end());

  // Redundant computation (Bamboo): pipeline rank p also holds the layers
  // of rank p+1 (the last rank those of rank 0) and runs their forward for
  // each of its micro-batches in its idle time.
  if (plan.mode != schedule::Mode::Train) {
    in.redundantProblem = "redundant computation protects training; an "
                          "inference plan has no pipeline state to keep";
    return in;
  }
  if (pp < 2) {
    in.redundantProblem =
        "redundant computation needs pipeline parallelism: each stage "
        "keeps its successor's layers, and this plan has pp=1; plan with "
        "pp>=2 (--dist-plan=...,pp=2 or --dist-search=\"pp>=2\")";
    return in;
  }
  if (plan.replicated()) {
    in.redundantProblem = "redundant computation is modelled for uniform "
                          "plans; this plan has per-stage replicas";
    return in;
  }
  if (r.steadyState) {
    in.redundantProblem = "redundant computation is modelled for "
                          "synchronous schedules; this plan is asynchronous";
    return in;
  }
  if (sharesNode) {
    in.redundantProblem =
        "a node holds two neighbouring pipeline stages, so losing it loses a "
        "stage and its backup; give each stage its own nodes (fewer "
        "devices per node, or tp*cp equal to the devices of a node)";
    return in;
  }
  double maxBusy = 0;
  for (double b : r.busyTime)
    maxBusy = std::max(maxBusy, b);
  double fill = std::max(0.0, r.iterationTime - maxBusy);
  double longest = 0, degraded = 0;
  for (unsigned p = 0; p < pp; ++p) {
    unsigned next = (p + 1) % pp, prev = (p + pp - 1) % pp;
    double fwd = 0;
    for (unsigned c = 0; c < costs.chunks; ++c)
      fwd += costs.stage(next, c).fwd;
    double extra = ps.schedule.microbatchesOf(p) * fwd;
    double idle = std::max(0.0, r.iterationTime - r.busyTime[p]);
    longest = std::max(longest, extra - idle);
    // Its layers' weights and optimizer state, and the memory it needs.
    const cost::MemoryBreakdown &m = costs.devices[next].staticMemory;
    double bytes = m.weights + m.optimizer;
    in.redundantExtraBytes = std::max(in.redundantExtraBytes, bytes);
    double capacity =
        memoryLimit > 0 ? memoryLimit : costs.devices[p].memoryCapacity;
    if (r.peakMemoryBytes[p] + bytes > capacity) {
      in.redundantProblem =
          formatv("redundant computation does not fit in memory: pipeline "
                  "rank {0} needs {1:F2} GB for its own stage and {2:F2} GB "
                  "for its successor's weights and optimizer state, over its "
                  "{3:F2} GB; use more pipeline stages, ZeRO or more "
                  "memory (--dist-memory-limit)",
                  p, r.peakMemoryBytes[p] / 1e9, bytes / 1e9, capacity / 1e9)
              .str();
      return in;
    }
    // Rank p lost: its predecessor runs both stages until a replacement
    // arrives.
    degraded += r.busyTime[prev] + r.busyTime[p] + fill;
  }
  in.redundantIterationTime = r.iterationTime + std::max(0.0, longest);
  in.degradedIterationTime = std::max(in.redundantIterationTime, degraded / pp);
  in.redundantPossible = true;
  return in;
}

/// The mean number of pipeline neighbours a node has on other nodes.
static double meanNeighbours(const ResilienceInputs &in) {
  if (in.neighbours.empty())
    return 0;
  double sum = 0;
  for (const std::vector<unsigned> &n : in.neighbours)
    sum += n.size();
  return sum / in.neighbours.size();
}

/// Elastic: the survivors' progress per second relative to the plan's. A
/// plan the survivors' best plan outruns is not made faster by losing a
/// node: such a plan should be searched again, not run.
static double survivorSpeed(const ResilienceInputs &in) {
  return std::min(1.0, in.iterationTime / in.survivorIterationTime);
}

ResilienceEstimate estimateResilience(const ResilienceInputs &in,
                                      const cluster::Availability &a,
                                      Resilience mode) {
  ResilienceEstimate e;
  e.mode = mode;
  e.iterationTime = in.iterationTime;
  e.failureFreeSamplesPerSecond =
      in.iterationTime > 0 ? in.samplesPerIteration / in.iterationTime : 0;
  double nodes = in.nodes;
  if (mode == Resilience::None) {
    // On-demand nodes: nothing is preempted.
    e.expectedSamplesPerSecond = e.failureFreeSamplesPerSecond;
    e.usdPerNodeHour = a.onDemandPrice;
    e.usdPerSample =
        a.onDemandPrice * nodes / 3600 / e.expectedSamplesPerSecond;
    return e;
  }
  double lambda = a.preemptionsPerNodeHour * nodes / 3600; // per second
  e.eventsPerHour = lambda * 3600;
  // Every node writes its devices' state at the node's bandwidth, all
  // nodes at once; a restart waits for the replacement, then reads it back.
  // An elastic job restarts on the survivors at once (its plan for them is
  // ready), reading the state back.
  e.checkpointSeconds =
      in.devicesPerNode * in.stateBytesPerDevice / a.checkpointBandwidth;
  e.restartSeconds = a.relaunchSeconds.value_or(0) +
                     (mode == Resilience::Elastic ? 0 : a.replacementSeconds) +
                     e.checkpointSeconds;
  double c = e.checkpointSeconds, r = e.restartSeconds;
  double inf = std::numeric_limits<double>::infinity();
  auto plan = [&](double fatalRate, double iteration) {
    double mtbf = fatalRate > 0 ? 1 / fatalRate : inf;
    double tau =
        std::isfinite(mtbf) ? std::max(dalyInterval(c, mtbf), iteration) : 0;
    e.intervalSeconds = tau;
    return tau > 0 ? checkpointFraction(mtbf, c, r, tau) : 1.0;
  };
  double fraction, samplesPerSecond;
  if (mode == Resilience::Checkpoint) {
    fraction = plan(lambda, in.iterationTime);
    samplesPerSecond = e.failureFreeSamplesPerSecond;
  } else if (mode == Resilience::Elastic) {
    // Every preemption restarts from the last checkpoint on the survivors,
    // which run at their own plan's speed until the replacement arrives;
    // then the job checkpoints and restarts on all nodes (c + r, no work
    // lost).
    e.survivorIterationTime = in.survivorIterationTime;
    fraction = plan(lambda, in.iterationTime);
    samplesPerSecond = e.failureFreeSamplesPerSecond;
    double lost = a.replacementSeconds * (1 - survivorSpeed(in)) + c + r;
    fraction *= std::max(0.0, 1 - lambda * lost);
  } else {
    double t = in.redundantIterationTime;
    e.iterationTime = t;
    samplesPerSecond = in.samplesPerIteration / t;
    // A preemption is fatal when a node holding the lost stage's backup
    // is preempted before the replacement arrives.
    double neighbourRate = meanNeighbours(in) * a.preemptionsPerNodeHour / 3600;
    e.fatalFraction = -std::expm1(-neighbourRate * a.replacementSeconds);
    double fatal = plan(lambda * e.fatalFraction, t);
    // Otherwise the interrupted iteration loses half its work on average
    // and the pipeline runs at the degraded speed until the replacement.
    double slow = t / in.degradedIterationTime;
    double lost = t / 2 + a.replacementSeconds * (1 - slow);
    fraction = fatal * std::max(0.0, 1 - lambda * (1 - e.fatalFraction) * lost);
  }
  e.expectedSamplesPerSecond = samplesPerSecond * fraction;
  double writes = e.intervalSeconds > 0 ? fraction * c / e.intervalSeconds : 0;
  e.lostSecondsPerEvent =
      lambda > 0 ? std::max(0.0, 1 - fraction - writes) / lambda : 0;
  e.usdPerNodeHour = a.preemptiblePrice;
  e.usdPerSample =
      e.expectedSamplesPerSecond > 0
          ? a.preemptiblePrice * nodes / 3600 / e.expectedSamplesPerSecond
          : inf;
  return e;
}

InjectionResult injectPreemptions(const ResilienceInputs &in,
                                  const cluster::Availability &a,
                                  Resilience mode, uint64_t seed,
                                  double hours) {
  InjectionResult out;
  out.seed = seed;
  out.hours = hours;
  ResilienceEstimate e = estimateResilience(in, a, mode);
  if (mode == Resilience::None) {
    out.samplesPerSecond = e.expectedSamplesPerSecond;
    out.usdPerSample = e.usdPerSample;
    return out;
  }
  double inf = std::numeric_limits<double>::infinity();
  double horizon = hours * 3600;
  double lambda = e.eventsPerHour / 3600;
  double t0 = e.iterationTime, c = e.checkpointSeconds;
  double tau = e.intervalSeconds, restart = e.restartSeconds;
  double slow = mode == Resilience::Redundant
                    ? in.redundantIterationTime / in.degradedIterationTime
                : mode == Resilience::Elastic ? survivorSpeed(in)
                                              : 1;
  // std::mt19937_64's output is fixed by the standard; the distributions
  // are not, so draws are made here.
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (rng() >> 11) * 0x1.0p-53; };
  auto gap = [&] {
    return lambda > 0 ? -std::log1p(-uniform()) / lambda : inf;
  };
  unsigned nodes = in.nodes;
  std::vector<double> downUntil(nodes, -inf);
  double t = 0, committed = 0, pending = 0, written = 0;
  double stallUntil = -inf, writeEnd = -inf;
  bool writing = false;
  // Elastic: running on the survivors until every replacement has come.
  bool shrunk = false;
  double nextEvent = gap();
  while (t < horizon) {
    bool stalled = t < stallUntil;
    bool anyDown = llvm::any_of(downUntil, [&](double d) { return d > t; });
    double rate = stalled || writing ? 0 : anyDown ? slow : 1;
    double next = std::min(horizon, nextEvent);
    if (stalled)
      next = std::min(next, stallUntil);
    if (writing)
      next = std::min(next, writeEnd);
    double due = inf; // when the work reaches the next checkpoint
    if (!writing && tau > 0 && rate > 0) {
      due = t + std::max(0.0, tau - pending) / rate;
      next = std::min(next, due);
    }
    for (double d : downUntil)
      if (d > t)
        next = std::min(next, d);
    pending += rate * (next - t);
    // Late in a long horizon t + (tau - pending) / rate can round to t:
    // reaching `due` is reaching the checkpoint, whatever the sum says.
    if (next >= due)
      pending = tau;
    t = next;
    if (t >= horizon)
      break;
    if (shrunk && llvm::none_of(downUntil, [&](double d) { return d > t; })) {
      // The replacement runs: checkpoint, and restart on every node.
      shrunk = false;
      writing = false;
      committed += pending;
      pending = 0;
      stallUntil = t + c + restart;
      continue;
    }
    if (writing && t >= writeEnd) {
      writing = false;
      committed += pending;
      pending = 0;
      written += c;
      continue;
    }
    if (!writing && !stalled && tau > 0 && pending >= tau) {
      writing = true;
      writeEnd = t + c;
      continue;
    }
    if (t < nextEvent)
      continue; // a replacement arrived or a restart ended
    nextEvent = t + gap();
    unsigned node = std::min<unsigned>(nodes - 1, uniform() * nodes);
    // A node that is gone (waiting for its replacement) runs nothing.
    if (downUntil[node] > t)
      continue;
    ++out.events;
    if (mode == Resilience::Elastic) {
      // Restart on the survivors from the last checkpoint.
      ++out.restarts;
      pending = 0;
      writing = false;
      stallUntil = t + restart;
      downUntil[node] = t + a.replacementSeconds;
      shrunk = true;
      continue;
    }
    bool fatal = mode == Resilience::Checkpoint || stalled;
    if (!fatal)
      for (unsigned n : in.neighbours[node])
        fatal |= downUntil[n] > t;
    if (fatal) {
      ++out.restarts;
      pending = 0;
      writing = false;
      stallUntil = t + restart;
      std::fill(downUntil.begin(), downUntil.end(), -inf);
    } else {
      downUntil[node] = t + a.replacementSeconds;
      pending = std::max(0.0, pending - t0 / 2);
    }
  }
  double progress = committed + pending;
  out.samplesPerSecond = progress / t0 * in.samplesPerIteration / horizon;
  out.lostSecondsPerEvent =
      out.events ? (horizon - progress - written) / out.events : 0;
  out.usdPerSample = out.samplesPerSecond > 0 ? a.preemptiblePrice * nodes /
                                                    3600 / out.samplesPerSecond
                                              : inf;
  return out;
}

ResilienceReport resilienceReport(const ResilienceInputs &in,
                                  const cluster::Availability &a,
                                  Resilience mode,
                                  std::optional<uint64_t> seed) {
  ResilienceReport r;
  r.availability = a;
  r.nodes = in.nodes;
  r.estimate = estimateResilience(in, a, mode);
  r.onDemand = estimateResilience(in, a, Resilience::None);
  if (seed)
    r.injection = injectPreemptions(in, a, mode, *seed);
  return r;
}

void printResilience(const ResilienceReport &r, raw_ostream &os) {
  const ResilienceEstimate &e = r.estimate;
  const cluster::Availability &a = r.availability;
  auto num = cluster::formatNumber;
  if (e.mode == Resilience::None) {
    os << formatv("resilience: none (on-demand nodes, ${0} per node-hour, "
                  "{1} nodes): ${2:e2} per sample\n",
                  num(a.onDemandPrice), r.nodes, e.usdPerSample);
    return;
  }
  os << formatv("resilience: {0} on preemptible nodes ({1} preemptions per "
                "node-hour x {2} nodes = {3:F2} per hour, replacement in {4} "
                "s)\n",
                resilienceName(e.mode), num(a.preemptionsPerNodeHour), r.nodes,
                e.eventsPerHour, num(a.replacementSeconds));
  if (e.mode == Resilience::Redundant)
    os << formatv("  iteration time   {0:F4} s with the successor's forwards "
                  "({1:F4} s without)\n",
                  e.iterationTime, r.onDemand.iterationTime);
  if (e.mode == Resilience::Elastic)
    os << formatv("  survivors        {0:F4} s per iteration on {1} nodes "
                  "until the replacement ({2:F4} s on {3}); then checkpoint "
                  "and restart on {3}\n",
                  e.survivorIterationTime, r.nodes - 1, e.iterationTime,
                  r.nodes);
  if (e.intervalSeconds > 0)
    os << formatv("  checkpoints      every {0:F0} s of work (writing {1:F1} "
                  "s), restart {2:F1} s\n",
                  e.intervalSeconds, e.checkpointSeconds, e.restartSeconds);
  else
    os << "  checkpoints      none (no preemption needs a restart)\n";
  if (e.mode == Resilience::Redundant)
    os << formatv("  fatal            {0:F2}% of preemptions also take the "
                  "stage's backup and restart from the checkpoint\n",
                  100 * e.fatalFraction);
  os << formatv("  expected         {0:F2} samples/s ({1:F1}% of {2:F2} "
                "failure-free on-demand)\n",
                e.expectedSamplesPerSecond,
                100 * e.expectedSamplesPerSecond /
                    r.onDemand.failureFreeSamplesPerSecond,
                r.onDemand.failureFreeSamplesPerSecond);
  os << formatv("  lost per event   {0:F1} s\n", e.lostSecondsPerEvent);
  os << formatv("  cost             ${0:e2} per sample at ${1} per "
                "node-hour (on-demand: ${2:e2} at ${3})\n",
                e.usdPerSample, num(a.preemptiblePrice),
                r.onDemand.usdPerSample, num(a.onDemandPrice));
  if (const std::optional<InjectionResult> &i = r.injection)
    os << formatv("preemptions: seed {0}, {1} h: {2} events, {3} restarts, "
                  "{4:F2} samples/s, {5:F1} s lost per event, ${6:e2} per "
                  "sample\n",
                  i->seed, num(i->hours), i->events, i->restarts,
                  i->samplesPerSecond, i->lostSecondsPerEvent, i->usdPerSample);
}

/// \p v, or null where it is not finite (a plan that makes no progress
/// costs infinitely much per sample).
static json::Value finite(double v) {
  return std::isfinite(v) ? json::Value(v) : json::Value(nullptr);
}

json::Value toJSON(const ResilienceReport &r) {
  const ResilienceEstimate &e = r.estimate;
  const cluster::Availability &a = r.availability;
  json::Object o{
      {"mode", resilienceName(e.mode)},
      {"nodes", int64_t(r.nodes)},
      {"preemptions_per_node_hour", a.preemptionsPerNodeHour},
      {"replacement_s", a.replacementSeconds},
      {"events_per_hour", e.eventsPerHour},
      {"iteration_time_s", e.iterationTime},
      {"checkpoint_s", e.checkpointSeconds},
      {"restart_s", e.restartSeconds},
      {"checkpoint_interval_s", e.intervalSeconds},
      {"fatal_fraction", e.fatalFraction},
      {"survivor_iteration_time_s", e.survivorIterationTime},
      {"failure_free_samples_per_s", e.failureFreeSamplesPerSecond},
      {"expected_samples_per_s", e.expectedSamplesPerSecond},
      {"lost_s_per_event", e.lostSecondsPerEvent},
      {"usd_per_node_hour", e.usdPerNodeHour},
      {"usd_per_sample", finite(e.usdPerSample)},
      {"on_demand_usd_per_sample", finite(r.onDemand.usdPerSample)},
  };
  if (const std::optional<InjectionResult> &i = r.injection)
    o["injected"] = json::Object{{"seed", i->seed},
                                 {"hours", i->hours},
                                 {"events", int64_t(i->events)},
                                 {"restarts", int64_t(i->restarts)},
                                 {"samples_per_s", i->samplesPerSecond},
                                 {"lost_s_per_event", i->lostSecondsPerEvent},
                                 {"usd_per_sample", finite(i->usdPerSample)}};
  return o;
}

} // namespace distopt::sim
