//===- Contention.cpp - The running plan and a migration on one set of links =//
//
// Part of DistOpt. See Contention.h and docs/resilience.md ("Contention").
//
//===----------------------------------------------------------------------===//

#include "lib/Sim/Contention.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

using namespace llvm;
using namespace distopt;
using namespace distopt::schedule;
using cluster::LinkLevel;

namespace distopt::sim {

double aloneBandwidth(const cluster::Cluster &cluster, unsigned from,
                      unsigned to) {
  double bw = cluster.linkBetween(from, to).bandwidth;
  if (cluster.levelBetween(from, to) == LinkLevel::Network)
    bw *= std::min(cluster.groupOf(from).devicesPerNic(),
                   cluster.groupOf(to).devicesPerNic());
  return bw;
}

Busiest busiest(const cluster::Cluster &cluster,
                ArrayRef<LinkTransfer> transfers, ArrayRef<double> seconds) {
  unsigned n = cluster.numDevices();
  std::vector<double> sends(n), receives(n), nicSends(n), nicReceives(n);
  for (auto [tr, s] : llvm::zip_equal(transfers, seconds)) {
    sends[tr.from] += s;
    receives[tr.to] += s;
    if (cluster.levelBetween(tr.from, tr.to) == LinkLevel::Network) {
      nicSends[cluster.nicOf(tr.from)] += s;
      nicReceives[cluster.nicOf(tr.to)] += s;
    }
  }
  Busiest b;
  for (unsigned d = 0; d < n; ++d) {
    if (std::max(sends[d], receives[d]) > b.seconds)
      b = {std::max(sends[d], receives[d]), d, false};
    // A NIC of one device is that device, counted above.
    if (std::max(nicSends[d], nicReceives[d]) > b.seconds)
      b = {std::max(nicSends[d], nicReceives[d]), d, true};
  }
  return b;
}

namespace {
/// One direction of a device's intra-node link, or of the NIC its network
/// traffic goes through (named by the lowest rank that shares it).
struct Port {
  unsigned owner;
  LinkLevel level;
  bool out;
  bool operator<(const Port &o) const {
    return std::tie(owner, level, out) < std::tie(o.owner, o.level, o.out);
  }
};

/// A message of the running plan, once per micro-batch: the ports it uses
/// and the time its bytes take alone on them (the latency is not shared).
struct Message {
  std::vector<Port> ports;
  double seconds = 0;
};

/// The messages of one virtual stage of one replica: its boundary messages
/// to the next stage (one per tensor and context rank, in parallel) and its
/// tensor-parallel collectives (one per context rank, one part per level,
/// in sequence).
struct StageTraffic {
  double base = 0;
  std::vector<Message> boundary;
  std::vector<std::vector<Message>> collectives;
};
} // namespace

static Port portOf(const cluster::Cluster &c, unsigned device, LinkLevel level,
                   bool out) {
  return {level == LinkLevel::Network ? c.nicOf(device) : device, level, out};
}

/// Bytes/s of \p p: the device's intra-node link, or its NIC: the
/// network's bandwidth per device times the devices that share it.
static double capacity(const cluster::Cluster &c, const Port &p) {
  double bw = c.link(p.level, p.owner).bandwidth;
  return p.level == LinkLevel::Network ? bw * c.groupOf(p.owner).devicesPerNic()
                                       : bw;
}

/// The share of a stage's TP collective bytes (StageCost::mbBytes, forward
/// and backward) that its forward sends: an inference stream runs no
/// backward.
static double forwardShare(const cost::ModelDesc &model, unsigned begin,
                           unsigned end, unsigned tp) {
  double fwd = 0, all = 0;
  for (unsigned l = begin; l < end; ++l)
    for (const cost::OpDesc &op : model.layers[l].ops)
      if (op.tpDivides(tp)) {
        fwd += op.tpAllReduceFwdBytes;
        all += op.tpAllReduceFwdBytes + op.tpAllReduceBwdBytes;
      }
  return all > 0 ? fwd / all : 0;
}

SharedLinks shareLinks(const Plan &running, const PipelineCosts &costs,
                       const cost::ModelDesc &model,
                       const cluster::Cluster &cluster,
                       double runningSamplesPerSecond,
                       ArrayRef<LinkTransfer> transfers) {
  // The ports the transfers use.
  std::set<Port> moving;
  for (const LinkTransfer &tr : transfers) {
    LinkLevel level = cluster.levelBetween(tr.from, tr.to);
    moving.insert(portOf(cluster, tr.from, level, true));
    moving.insert(portOf(cluster, tr.to, level, false));
  }

  // The running plan's messages, by stage and replica, and the bytes each
  // port carries per micro-batch.
  std::map<Port, double> bytesPerMicrobatch;
  std::vector<std::vector<StageTraffic>> stages(costs.numVirtualStages());
  for (unsigned vs = 0; vs < costs.numVirtualStages(); ++vs) {
    const StageCost &st = costs.stages[vs];
    unsigned s = running.rankOf(vs);
    double share = forwardShare(model, st.layerBegin, st.layerEnd, running.tp);
    for (unsigned d = 0; d < running.replicasOf(s); ++d) {
      StageTraffic traffic;
      traffic.base = st.fwd + st.sendNextTime;
      for (unsigned c = 0; c < running.cp; ++c) {
        std::vector<Message> parts;
        for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l) {
          double bytes = st.mbBytes[l] * share;
          if (bytes <= 0)
            continue;
          LinkLevel level = static_cast<LinkLevel>(l);
          Message m;
          for (unsigned t = 0; t < running.tp; ++t) {
            unsigned dev = running.globalRank(s, d, t, c);
            const cluster::LinkSpec &link = cluster.link(level, dev);
            m.seconds =
                std::max(m.seconds,
                         bytes / (link.bandwidth * link.collectiveEfficiency));
            for (bool out : {true, false}) {
              m.ports.push_back(portOf(cluster, dev, level, out));
              bytesPerMicrobatch[m.ports.back()] += bytes;
            }
          }
          parts.push_back(std::move(m));
        }
        traffic.collectives.push_back(std::move(parts));
        if (vs + 1 == costs.numVirtualStages() || st.sendNextBytes <= 0)
          continue;
        for (unsigned t = 0; t < running.tp; ++t) {
          unsigned a = running.globalRank(s, d, t, c);
          unsigned b = running.globalRank(running.rankOf(vs + 1), d, t, c);
          LinkLevel level = cluster.levelBetween(a, b);
          Message m;
          m.seconds = st.sendNextBytes / cluster.linkBetween(a, b).bandwidth;
          m.ports = {portOf(cluster, a, level, true),
                     portOf(cluster, b, level, false)};
          bytesPerMicrobatch[m.ports[0]] += st.sendNextBytes;
          bytesPerMicrobatch[m.ports[1]] += st.sendNextBytes;
          traffic.boundary.push_back(std::move(m));
        }
      }
      stages[vs].push_back(std::move(traffic));
    }
  }

  SharedLinks r;
  for (const auto &[port, bytes] : bytesPerMicrobatch)
    r.sharedPorts += bytes > 0 && moving.count(port);

  // A message through a port that carries transfers gets half of it: its
  // bytes take twice as long, and its stage (of that replica) as much
  // longer. The stream's period is the slowest stage of any replica; one
  // batch's latency the stages' slowest replicas in sequence, then the
  // period for each further micro-batch (lib/Search/Infer.cpp).
  auto rateWhile = [&](const std::set<Port> &busy) {
    auto shared = [&](const Message &m) {
      return llvm::any_of(m.ports,
                          [&](const Port &p) { return busy.count(p); });
    };
    double period = 0, slowedPeriod = 0, sum = 0, slowedSum = 0;
    for (const std::vector<StageTraffic> &replicas : stages) {
      double slowest = 0, slowestSlowed = 0;
      for (const StageTraffic &traffic : replicas) {
        double boundary = 0, collectives = 0;
        for (const Message &m : traffic.boundary)
          boundary = std::max(boundary, shared(m) ? m.seconds : 0);
        for (const std::vector<Message> &parts : traffic.collectives) {
          double group = 0;
          for (const Message &m : parts)
            group += shared(m) ? m.seconds : 0;
          collectives = std::max(collectives, group);
        }
        slowest = std::max(slowest, traffic.base);
        slowestSlowed =
            std::max(slowestSlowed, traffic.base + boundary + collectives);
      }
      period = std::max(period, slowest);
      slowedPeriod = std::max(slowedPeriod, slowestSlowed);
      sum += slowest;
      slowedSum += slowestSlowed;
    }
    double m = running.numMicrobatches;
    double before = running.objective == InferObjective::Latency
                        ? sum + (m - 1) * period
                        : period;
    double after = running.objective == InferObjective::Latency
                       ? slowedSum + (m - 1) * slowedPeriod
                       : slowedPeriod;
    return runningSamplesPerSecond * (after > 0 ? before / after : 1);
  };
  r.runningSamplesPerSecond = rateWhile(moving);

  // The slowed plan sends each port's bytes at its micro-batch rate; a
  // transfer gets the rest of its busier port, and at least half (fair
  // share: of two flows on a port each gets half while both send).
  double microbatchesPerSecond =
      r.runningSamplesPerSecond / (double(running.dp) * running.mbs);
  auto runningShare = [&](const Port &p) {
    auto it = bytesPerMicrobatch.find(p);
    if (it == bytesPerMicrobatch.end())
      return 0.0;
    return it->second * microbatchesPerSecond / capacity(cluster, p);
  };
  for (const LinkTransfer &tr : transfers) {
    LinkLevel level = cluster.levelBetween(tr.from, tr.to);
    double used = std::max(runningShare(portOf(cluster, tr.from, level, true)),
                           runningShare(portOf(cluster, tr.to, level, false)));
    r.transferSeconds.push_back(cluster.linkBetween(tr.from, tr.to).latency +
                                tr.bytes /
                                    (aloneBandwidth(cluster, tr.from, tr.to) *
                                     std::max(0.5, 1 - used)));
  }
  r.move = busiest(cluster, transfers, r.transferSeconds);

  // Each port carries its transfers back to back from the start; the plan
  // is slowed by the shared ports still carrying theirs, span by span.
  std::map<Port, double> until;
  for (auto [tr, seconds] : llvm::zip_equal(transfers, r.transferSeconds)) {
    LinkLevel level = cluster.levelBetween(tr.from, tr.to);
    until[portOf(cluster, tr.from, level, true)] += seconds;
    until[portOf(cluster, tr.to, level, false)] += seconds;
  }
  std::set<Port> contested;
  for (const auto &[port, bytes] : bytesPerMicrobatch)
    if (bytes > 0 && moving.count(port))
      contested.insert(port);
  while (!contested.empty()) {
    double end = std::numeric_limits<double>::infinity();
    for (const Port &p : contested)
      end = std::min(end, until[p]);
    r.samplesLost += (runningSamplesPerSecond - rateWhile(contested)) *
                     (end - r.slowedSeconds);
    r.slowedSeconds = end;
    for (auto it = contested.begin(); it != contested.end();)
      it = until[*it] <= end ? contested.erase(it) : std::next(it);
  }
  return r;
}

} // namespace distopt::sim
