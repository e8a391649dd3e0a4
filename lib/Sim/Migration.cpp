//===- Migration.cpp - Moving a running plan to a new one -------*- C++ -*-===//
//
// Part of DistOpt. See Migration.h and docs/resilience.md ("Re-planning").
//
//===----------------------------------------------------------------------===//

#include "lib/Sim/Migration.h"
#include "lib/Sim/Report.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

using namespace llvm;
using namespace distopt;
using namespace distopt::schedule;

namespace distopt::sim {

std::vector<std::vector<LayerSlice>> heldSlices(const Plan &plan,
                                                unsigned numLayers) {
  std::vector<std::vector<LayerSlice>> held(plan.numDevices());
  for (unsigned vs = 0; vs < plan.numVirtualStages(); ++vs) {
    auto [begin, end] = plan.stageLayers(vs, numLayers);
    for (const std::vector<unsigned> &group :
         plan.tensorGroups(plan.rankOf(vs)))
      for (auto [t, rank] : llvm::enumerate(group))
        for (unsigned l = begin; l < end; ++l)
          held[rank].push_back(
              {l, double(t) / plan.tp, double(t + 1) / plan.tp});
  }
  return held;
}

std::string migrationProblem(const Plan &plan) {
  if (plan.ep > 1)
    return "its routed experts are sharded over ep=" + std::to_string(plan.ep) +
           " replicas, which the migration does not follow";
  if (plan.offload.any())
    return "it offloads state to the nodes' storage tiers";
  if (plan.mode == Mode::Train && plan.zero > 0)
    return "its optimizer state is ZeRO-" + std::to_string(plan.zero) +
           " sharded over the data-parallel replicas, which the migration "
           "does not follow";
  return "";
}

namespace {
/// The parameters of a layer by how tensor parallelism holds them in the
/// running plan and in the next one, as the cost model prices them
/// (OpDesc::tpMode: an op whose region a degree does not divide is whole
/// on every tensor rank): split in both, in
/// the running plan only (the next wants them whole), in the next only, or
/// in neither.
struct LayerParams {
  double split = 0, gathered = 0, sliced = 0, whole = 0;
};
} // namespace

static LayerParams layerParams(const cost::LayerDesc &layer,
                               const Plan &running, const Plan &next) {
  LayerParams n;
  for (const cost::OpDesc &op : layer.ops) {
    bool before = op.tpMode(running.tp) == cost::TpMode::Split;
    bool after = op.tpMode(next.tp) == cost::TpMode::Split;
    (before ? (after ? n.split : n.gathered) : (after ? n.sliced : n.whole)) +=
        op.params;
  }
  return n;
}

static double overlap(double a0, double a1, double b0, double b1) {
  return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
}

static std::string megabytes(double bytes) {
  return formatv("{0:F1} MB", bytes / 1e6).str();
}

Expected<MigrationReport> planMigration(const MigrationInputs &in,
                                        const cost::ModelDesc &model,
                                        const cluster::Cluster &cluster) {
  for (const Plan *p : {&in.running, &in.next}) {
    std::string problem = migrationProblem(*p);
    if (!problem.empty())
      return createStringError(inconvertibleErrorCode(),
                               "cannot migrate %s plan %s: %s",
                               p == &in.running ? "from the running" : "to the",
                               p->str().c_str(), problem.c_str());
    if (p->numDevices() > cluster.numDevices())
      return createStringError(
          inconvertibleErrorCode(),
          "plan %s needs %u devices and cluster '%s' has %u", p->str().c_str(),
          p->numDevices(), cluster.name.c_str(), cluster.numDevices());
  }
  unsigned numLayers = model.layers.size();
  MigrationReport r;
  r.runningSpec = in.running.str();
  r.nextSpec = in.next.str();
  r.samePlan = r.runningSpec == r.nextSpec;
  r.training = in.training;

  // Who holds which slice of each layer now: holders[layer] = {rank, slice}.
  std::vector<std::vector<std::pair<unsigned, LayerSlice>>> holders(numLayers);
  for (auto [rank, slices] : llvm::enumerate(heldSlices(in.running, numLayers)))
    for (const LayerSlice &s : slices)
      holders[s.layer].push_back({unsigned(rank), s});

  // Each piece a device of the new plan lacks comes from the holder with
  // the fastest link to it, then the one that has sent least so far.
  std::vector<double> sent(cluster.numDevices()), received(sent.size());
  std::map<std::tuple<unsigned, unsigned, unsigned>, Transfer> byKey;
  std::vector<std::vector<LayerSlice>> nextHeld =
      heldSlices(in.next, numLayers);
  std::vector<int> stageOf(numLayers, -1);
  for (unsigned vs = 0; vs < in.next.numVirtualStages(); ++vs) {
    auto [begin, end] = in.next.stageLayers(vs, numLayers);
    for (unsigned l = begin; l < end; ++l)
      stageOf[l] = vs;
    StageMigration st;
    st.stage = vs;
    st.layerBegin = begin;
    st.layerEnd = end;
    st.devices = in.next.stageDevices(in.next.rankOf(vs));
    r.stages.push_back(std::move(st));
  }
  for (auto [to, slices] : llvm::enumerate(nextHeld)) {
    for (const LayerSlice &want : slices) {
      LayerParams p =
          layerParams(model.layers[want.layer], in.running, in.next);
      const double wanted = want.end - want.begin;
      StageMigration &st = r.stages[stageOf[want.layer]];
      const auto &owners = holders[want.layer];
      bool holdsLayer =
          llvm::any_of(owners, [&](const auto &o) { return o.first == to; });
      bool replicatedFetched = false;
      for (const auto &[owner, slice] : owners) {
        if (owner != to)
          continue;
        double kept =
            overlap(want.begin, want.end, slice.begin, slice.end) * p.split +
            (slice.end - slice.begin) * p.gathered + wanted * p.sliced +
            p.whole;
        st.keptBytes += kept * in.bytesPerParam;
      }
      // The distinct slices of the running plan (its TP shards) that the
      // wanted slice overlaps and this device does not hold.
      std::vector<LayerSlice> shards;
      for (const auto &[owner, slice] : owners)
        if (llvm::none_of(shards, [&](const LayerSlice &s) {
              return s.begin == slice.begin;
            }))
          shards.push_back(slice);
      for (const LayerSlice &shard : shards) {
        bool local = llvm::any_of(owners, [&](const auto &o) {
          return o.first == to && o.second.begin == shard.begin;
        });
        if (local)
          continue;
        // The wanted part of this shard, all of it where the next plan
        // wants the op whole; what every running rank holds whole comes
        // once, from the first shard.
        double params =
            overlap(want.begin, want.end, shard.begin, shard.end) * p.split +
            (shard.end - shard.begin) * p.gathered;
        if (!holdsLayer && !replicatedFetched) {
          params += wanted * p.sliced + p.whole;
          replicatedFetched = true;
        }
        if (params <= 0)
          continue;
        unsigned best = 0;
        double bestBw = -1;
        bool found = false;
        for (const auto &[owner, slice] : owners) {
          if (slice.begin != shard.begin)
            continue;
          double bw = cluster.linkBetween(owner, to).bandwidth;
          if (!found || bw > bestBw ||
              (bw == bestBw && sent[owner] < sent[best])) {
            best = owner;
            bestBw = bw;
            found = true;
          }
        }
        double bytes = params * in.bytesPerParam;
        Transfer &tr = byKey[{st.stage, best, unsigned(to)}];
        tr.stage = st.stage;
        tr.from = best;
        tr.to = to;
        if (tr.layers.empty() || tr.layers.back() != want.layer)
          tr.layers.push_back(want.layer);
        tr.bytes += bytes;
        sent[best] += bytes;
        received[to] += bytes;
        st.receivedBytes += bytes;
      }
    }
  }

  // Cost each transfer on its link; all run at once, limited by the
  // busiest device's sends or receives.
  std::map<std::string, double> perLevel;
  std::vector<LinkTransfer> links;
  std::vector<double> alone;
  for (auto &[key, tr] : byKey) {
    cluster::LinkSpec link = cluster.linkBetween(tr.from, tr.to);
    tr.link = cluster.levelName(cluster.levelBetween(tr.from, tr.to));
    tr.seconds =
        link.latency + tr.bytes / aloneBandwidth(cluster, tr.from, tr.to);
    links.push_back({tr.from, tr.to, tr.bytes});
    alone.push_back(tr.seconds);
    perLevel[tr.link] += tr.bytes;
    r.bytesMoved += tr.bytes;
    r.transfers.push_back(std::move(tr));
  }
  for (const StageMigration &st : r.stages)
    r.bytesKept += st.keptBytes;
  for (cluster::LinkLevel level :
       {cluster::LinkLevel::IntraNode, cluster::LinkLevel::Network}) {
    auto it = perLevel.find(cluster.levelName(level));
    if (it != perLevel.end()) {
      r.bytesPerLevel.push_back(*it);
      perLevel.erase(it);
    }
  }
  Busiest move = busiest(cluster, links, alone);
  r.moveSeconds = move.seconds;
  r.busiestDevice = move.device;
  r.busiestNic = move.nic;

  // Training switches at an iteration boundary, where the pipeline is
  // empty; inference drains the running pipeline's last batch and fills
  // the new one with its first.
  r.runningLatency = in.runningLatency;
  r.nextLatency = in.nextLatency;
  r.drainSeconds = in.training ? 0 : in.runningLatency;
  r.fillSeconds = in.training ? 0 : in.nextLatency;
  // A pause stops the running job before the new one starts, so the new
  // job's start is downtime; preparing beside starts it while the running
  // job serves.
  r.relaunch = in.relaunch;
  r.pauseDowntime =
      r.drainSeconds + r.relaunch.seconds + r.moveSeconds + r.fillSeconds;

  if (in.training) {
    r.besideProblem = "training updates every weight and its optimizer state "
                      "at each step, so a copy prepared beside the running "
                      "job is stale at the switch";
  } else {
    // Each device holds the running plan's peak and the slices it
    // receives; report the first device over its memory, else the fullest.
    r.besidePossible = true;
    double fullest = -1;
    for (unsigned d = 0; d < received.size() && r.besidePossible; ++d) {
      double capacity =
          in.memoryLimit > 0 ? in.memoryLimit : cluster.deviceOf(d).memoryBytes;
      double running =
          d < in.runningPeakPerDevice.size() ? in.runningPeakPerDevice[d] : 0;
      double peak = running + received[d];
      bool over = peak > capacity;
      if (over || peak / capacity > fullest) {
        fullest = peak / capacity;
        r.besidePeak = peak;
        r.besideCapacity = capacity;
        r.besideDevice = d;
      }
      if (over) {
        r.besidePossible = false;
        r.besideProblem = formatv("rank {0} would hold {1} for the running "
                                  "plan and {2} of the new plan's weights, "
                                  "over its {3}",
                                  d, megabytes(running), megabytes(received[d]),
                                  megabytes(capacity))
                              .str();
      }
    }
    // The move shares the links with the running plan's messages, which
    // slows both; the running plan serves on meanwhile.
    r.preparingSamplesPerSecond = in.runningSamplesPerSecond;
    r.besideMoveSeconds = r.moveSeconds;
    r.besideBusiestDevice = r.busiestDevice;
    r.besideBusiestNic = r.busiestNic;
    if (in.runningCosts) {
      SharedLinks shared =
          shareLinks(in.running, *in.runningCosts, model, cluster,
                     in.runningSamplesPerSecond, links);
      r.contentionPriced = true;
      r.sharedPorts = shared.sharedPorts;
      r.preparingSamplesPerSecond = shared.runningSamplesPerSecond;
      r.besideMoveSeconds = shared.move.seconds;
      r.besideBusiestDevice = shared.move.device;
      r.besideBusiestNic = shared.move.nic;
      r.slowedSeconds = shared.slowedSeconds;
      r.slowdownSamplesLost = shared.samplesLost;
    }
    // The switch waits until the new job is ready, so its start and the
    // move lengthen the preparation, not the downtime.
    r.prepareSeconds = r.relaunch.seconds + r.besideMoveSeconds;
    r.besideDowntime = r.drainSeconds + r.fillSeconds;
  }

  // Samples not served, against the running plan kept. A pause ends its
  // switch sooner by what the contention adds to the move, and serves the
  // new plan meanwhile: compared at the same moment it loses that gain
  // less.
  r.runningSamplesPerSecond = in.runningSamplesPerSecond;
  r.nextSamplesPerSecond = in.nextSamplesPerSecond;
  double gain = in.nextSamplesPerSecond - in.runningSamplesPerSecond;
  r.pauseSamplesLost = r.pauseDowntime * in.runningSamplesPerSecond;
  r.pauseSamplesLostCompared = r.pauseSamplesLost;
  if (r.besidePossible) {
    r.besideSamplesLost =
        r.besideDowntime * in.runningSamplesPerSecond + r.slowdownSamplesLost;
    r.pauseSooner = r.besideMoveSeconds - r.moveSeconds;
    r.pauseSamplesLostCompared -= gain * r.pauseSooner;
  }
  r.chosenBeside =
      r.besidePossible && r.besideSamplesLost <= r.pauseSamplesLostCompared;
  r.downtime = r.chosenBeside ? r.besideDowntime : r.pauseDowntime;
  r.samplesLost = r.chosenBeside ? r.besideSamplesLost : r.pauseSamplesLost;

  // The samples lost, made up at the gained rate.
  r.worthIt = !r.samePlan && gain > 0;
  r.breakEvenSeconds = r.worthIt ? r.samplesLost / gain
                                 : std::numeric_limits<double>::infinity();
  return r;
}

static std::string busiestName(unsigned device, bool nic) {
  return (nic ? "the NIC of rank " : "rank ") + std::to_string(device);
}

/// The summary's `contention` line: how the move beside the running plan
/// and its messages slow each other.
static void printContention(const MigrationReport &r, raw_ostream &os) {
  os << "  contention       ";
  if (!r.contentionPriced) {
    os << "not priced: the running plan's messages are not known; the "
          "move is priced alone\n";
    return;
  }
  if (r.sharedPorts == 0) {
    os << "none: no link carries both the running plan's messages and the "
          "move\n";
    return;
  }
  double change =
      r.runningSamplesPerSecond > 0
          ? 100 * (r.preparingSamplesPerSecond / r.runningSamplesPerSecond - 1)
          : 0.0;
  os << formatv("{0} link port{1} carry the running plan's messages and the "
                "move (fair share): running plan {2:F4} samples/s while "
                "preparing ({3:F1}%), move {4:F3} s beside it ({5:F3} s "
                "alone, {6} busiest), slowed for {7:F3} s, {8:F1} samples "
                "lost to the slowdown\n",
                r.sharedPorts, r.sharedPorts == 1 ? "" : "s",
                r.preparingSamplesPerSecond, change, r.besideMoveSeconds,
                r.moveSeconds,
                busiestName(r.besideBusiestDevice, r.besideBusiestNic),
                r.slowedSeconds, r.slowdownSamplesLost);
}

void printMigration(const MigrationReport &r, raw_ostream &os) {
  os << "replan: running " << r.runningSpec << "\n";
  os << "  new              " << r.nextSpec
     << (r.samePlan ? " (the same plan)" : "") << "\n";
  double change =
      r.runningSamplesPerSecond > 0
          ? 100 * (r.nextSamplesPerSecond / r.runningSamplesPerSecond - 1)
          : 0.0;
  os << formatv("  samples/s        {0:F4} new, {1:F4} running plan on this "
                "cluster ({2}{3:F1}%)\n",
                r.nextSamplesPerSecond, r.runningSamplesPerSecond,
                change >= 0 ? "+" : "", change);
  if (!r.training)
    os << formatv("  latency          {0:F4} s new, {1:F4} s running\n",
                  r.nextLatency, r.runningLatency);
  os << "  moves            " << megabytes(r.bytesMoved) << " of "
     << (r.training ? "weights and optimizer state" : "weights") << " ("
     << megabytes(r.bytesKept) << " stay)";
  for (const auto &[level, bytes] : r.bytesPerLevel)
    os << ", " << megabytes(bytes) << " over " << level;
  if (r.bytesMoved > 0)
    os << formatv(", {0:F3} s ({1} busiest)\n", r.moveSeconds,
                  busiestName(r.busiestDevice, r.busiestNic));
  else
    os << ", nothing moves\n";
  for (const StageMigration &st : r.stages) {
    os << "  stage " << st.stage << " layers " << st.layerBegin << "-"
       << (st.layerEnd ? st.layerEnd - 1 : 0)
       << (st.devices.size() == 1 ? " on rank " : " on ranks ")
       << numberRuns(st.devices) << ": keeps " << megabytes(st.keptBytes)
       << ", receives " << megabytes(st.receivedBytes) << "\n";
    for (const Transfer &tr : r.transfers)
      if (tr.stage == st.stage)
        os << formatv("    rank {0} -> rank {1}: layers {2}, {3} over {4}, "
                      "{5:F3} s\n",
                      tr.from, tr.to, numberRuns(tr.layers),
                      megabytes(tr.bytes), tr.link, tr.seconds);
  }
  if (r.relaunch.given)
    os << formatv("  relaunch         {0:F3} s to start the new job ({1})\n",
                  r.relaunch.seconds, r.relaunch.source);
  else
    os << "  relaunch         not priced: none given (the cluster's "
          "availability.relaunch_s, or --dist-relaunch=FILE from dist-run "
          "--record-relaunch); a pause's process restart is left out\n";
  os << formatv("  pause-and-resume downtime {0:F3} s (drain {1:F3} + "
                "relaunch {2:F3} + move {3:F3} + fill {4:F3})\n",
                r.pauseDowntime, r.drainSeconds, r.relaunch.seconds,
                r.moveSeconds, r.fillSeconds);
  if (r.besidePossible)
    os << formatv("  prepare-beside   downtime {0:F3} s (drain {1:F3} + fill "
                  "{2:F3}; {3:F3} s preparing while serving: relaunch "
                  "{4:F3} + move {5:F3}, rank {6} peaks at {7} of {8})\n",
                  r.besideDowntime, r.drainSeconds, r.fillSeconds,
                  r.prepareSeconds, r.relaunch.seconds, r.besideMoveSeconds,
                  r.besideDevice, megabytes(r.besidePeak),
                  megabytes(r.besideCapacity));
  else
    os << "  prepare-beside   not possible: " << r.besideProblem
       << "; pause-and-resume instead\n";
  if (r.besidePossible)
    printContention(r, os);
  os << "  samples lost     ";
  if (r.besidePossible)
    os << formatv("prepare-beside {0:F1} (downtime {1:F1} + slowdown {2:F1}), ",
                  r.besideSamplesLost,
                  r.besideSamplesLost - r.slowdownSamplesLost,
                  r.slowdownSamplesLost);
  os << formatv("pause-and-resume {0:F1} (its downtime", r.pauseSamplesLost);
  if (r.pauseSooner > 0)
    os << formatv("; {0:F1} when it ends {1:F3} s sooner and serves the new "
                  "plan meanwhile",
                  r.pauseSamplesLostCompared, r.pauseSooner);
  os << ")\n";
  if (r.samePlan)
    os << "  verdict          keep the running plan: it is still the best\n";
  else if (!r.worthIt)
    os << "  verdict          keep the running plan: the new one is not "
          "faster on this cluster\n";
  else
    os << formatv("  verdict          re-plan ({0}): {1:F3} s down, {2:F1} "
                  "samples lost, made up after {3:F1} s\n",
                  r.chosenBeside ? "prepare beside" : "pause and resume",
                  r.downtime, r.samplesLost, r.breakEvenSeconds);
}

json::Value toJSON(const MigrationReport &r) {
  json::Array transfers;
  for (const Transfer &tr : r.transfers) {
    json::Array layers;
    for (unsigned l : tr.layers)
      layers.push_back(l);
    transfers.push_back(json::Object{{"stage", tr.stage},
                                     {"from", tr.from},
                                     {"to", tr.to},
                                     {"layers", std::move(layers)},
                                     {"bytes", tr.bytes},
                                     {"link", tr.link},
                                     {"time_s", tr.seconds}});
  }
  json::Array stages;
  for (const StageMigration &st : r.stages) {
    json::Array devices;
    for (unsigned d : st.devices)
      devices.push_back(d);
    stages.push_back(
        json::Object{{"stage", st.stage},
                     {"devices", std::move(devices)},
                     {"layers", json::Array{st.layerBegin, st.layerEnd}},
                     {"kept_bytes", st.keptBytes},
                     {"received_bytes", st.receivedBytes}});
  }
  json::Object levels;
  for (const auto &[level, bytes] : r.bytesPerLevel)
    levels[level] = bytes;
  json::Object beside{{"possible", r.besidePossible}};
  if (r.besidePossible) {
    beside["prepare_s"] = r.prepareSeconds;
    beside["relaunch_s"] = r.relaunch.seconds;
    beside["move_s"] = r.besideMoveSeconds;
    beside["downtime_s"] = r.besideDowntime;
    beside["samples_lost"] = r.besideSamplesLost;
    json::Object contention{{"priced", r.contentionPriced},
                            {"rule", "fair-share"}};
    if (r.contentionPriced) {
      contention["shared_ports"] = r.sharedPorts;
      contention["running_samples_per_s"] = r.preparingSamplesPerSecond;
      contention["move_s"] = r.besideMoveSeconds;
      contention["busiest_device"] = r.besideBusiestDevice;
      contention["busiest_is_nic"] = r.besideBusiestNic;
      contention["slowed_s"] = r.slowedSeconds;
      contention["samples_lost"] = r.slowdownSamplesLost;
    }
    beside["contention"] = std::move(contention);
    beside["peak_memory_bytes"] = r.besidePeak;
    beside["memory_bytes"] = r.besideCapacity;
    beside["device"] = r.besideDevice;
  } else {
    beside["problem"] = r.besideProblem;
  }
  return json::Object{
      {"running_plan", r.runningSpec},
      {"new_plan", r.nextSpec},
      {"same_plan", r.samePlan},
      {"moves", r.training ? "weights+optimizer" : "weights"},
      {"bytes_moved", r.bytesMoved},
      {"bytes_kept", r.bytesKept},
      {"bytes_per_link_level", std::move(levels)},
      {"move_s", r.moveSeconds},
      {"busiest_device", r.busiestDevice},
      {"busiest_is_nic", r.busiestNic},
      {"stages", std::move(stages)},
      {"transfers", std::move(transfers)},
      {"relaunch", json::Object{{"seconds", r.relaunch.seconds},
                                {"given", r.relaunch.given},
                                {"source", r.relaunch.source}}},
      {"pause_resume",
       json::Object{{"drain_s", r.drainSeconds},
                    {"relaunch_s", r.relaunch.seconds},
                    {"move_s", r.moveSeconds},
                    {"fill_s", r.fillSeconds},
                    {"downtime_s", r.pauseDowntime},
                    {"samples_lost", r.pauseSamplesLost},
                    {"sooner_s", r.pauseSooner},
                    {"samples_lost_compared", r.pauseSamplesLostCompared}}},
      {"prepare_beside", std::move(beside)},
      {"strategy", r.chosenBeside ? "prepare-beside" : "pause-resume"},
      {"downtime_s", r.downtime},
      {"samples_lost", r.samplesLost},
      {"running_samples_per_s", r.runningSamplesPerSecond},
      {"new_samples_per_s", r.nextSamplesPerSecond},
      {"running_latency_s", r.runningLatency},
      {"new_latency_s", r.nextLatency},
      {"worth_it", r.worthIt},
      {"break_even_s", std::isfinite(r.breakEvenSeconds)
                           ? json::Value(r.breakEvenSeconds)
                           : json::Value(nullptr)}};
}

} // namespace distopt::sim
