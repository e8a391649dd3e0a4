//===- Branches.cpp - Branch-level placement for inference -----*- C++ -*-===//
//
// Part of DistOpt. See Branches.h: every assignment of the trunk and the
// branches to devices, priced with the cost model's tables (the forward of
// each piece on each device kind) and the cluster's links (CostModel's
// point-to-point time), for one batch's latency.
//
//===----------------------------------------------------------------------===//
#include "lib/Search/Branches.h"
#include "lib/Search/SearchImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace llvm;
using namespace distopt;
using namespace distopt::search;

namespace {
/// Prices assignments of one forked model on one cluster.
struct Pricer {
  Pricer(const cost::ModelDesc &pieces, const BranchShape &shape,
         const cluster::Cluster &c, const cost::CostModel &cm,
         const SearchOptions &o, unsigned devices)
      : shape(shape), c(c), k(shape.branches), D(devices),
        time(devices, std::vector<double>(shape.branches + 2)),
        weights(shape.branches + 2), limit(devices) {
    search::detail::Tables t(pieces, c, cm, o.memory);
    double elem = o.memory.mixedPrecision ? 2 : 4;
    unsigned batch = o.globalBatch;
    for (unsigned d = 0; d < D; ++d) {
      unsigned ty = c.groupOf(d).deviceIndex;
      const search::detail::Tables::Times &tt =
          t.times(ty, 1, batch, cost::Recompute::None);
      for (unsigned p = 0; p < k + 2; ++p)
        time[d][p] = tt.fwd[p + 1] - tt.fwd[p];
      limit[d] = o.memoryLimit > 0 ? o.memoryLimit : c.devices[ty].memoryBytes;
    }
    for (unsigned p = 0; p < k + 2; ++p)
      weights[p] = pieces.layers[p].params() * elem;
    this->batch = batch;
  }

  double transfer(unsigned from, unsigned to, double bytes) const {
    if (from == to || bytes <= 0)
      return 0;
    return cost::CostModel::p2pTime(bytes * batch,
                                    c.link(c.levelBetween(from, to), from));
  }

  /// The placement of assignment \p a (a[0] the trunk's device, a[i] branch
  /// i's); false when a device's weights do not fit.
  bool price(ArrayRef<unsigned> a, BranchPlacement &out) const {
    unsigned t = a[0];
    out.devices.assign(a.begin(), a.end());
    out.devices.push_back(t); // the tail
    out.trunk = time[t][0];
    out.tail = time[t][k + 1];
    out.perDevice.clear();
    // Weights per device.
    std::vector<double> held(D, 0);
    held[t] += weights[0] + weights[k + 1];
    for (unsigned i = 1; i <= k; ++i)
      held[a[i]] += weights[i];
    for (unsigned d = 0; d < D; ++d)
      if (held[d] > limit[d])
        return false;
    // The trunk's device sends each remote device its inputs in device
    // order, one message after the other on its link; its own branches
    // start when the trunk ends.
    double cursor = out.trunk, join = out.trunk;
    for (unsigned d = 0; d < D; ++d) {
      BranchPlacement::DeviceTime dt;
      dt.device = d;
      std::vector<bool> needs(shape.valueBytes.size(), false);
      double outBytes = 0;
      for (unsigned i = 1; i <= k; ++i)
        if (a[i] == d) {
          dt.branches.push_back(i);
          dt.compute += time[d][i];
          for (unsigned v : shape.branchInputs[i - 1])
            needs[v] = true;
          outBytes += shape.branchOutputBytes[i - 1];
        }
      if (dt.branches.empty() && d != t)
        continue;
      double inBytes = 0;
      for (auto [v, need] : llvm::enumerate(needs))
        if (need)
          inBytes += shape.valueBytes[v];
      cursor += transfer(t, d, inBytes);
      dt.start = d == t ? out.trunk : cursor;
      dt.arrive = dt.start + dt.compute + transfer(d, t, outBytes);
      dt.weightBytes = held[d];
      join = std::max(join, dt.arrive);
      out.perDevice.push_back(std::move(dt));
    }
    out.latency = join + out.tail;
    return true;
  }

  const BranchShape &shape;
  const cluster::Cluster &c;
  unsigned k, D, batch = 1;
  std::vector<std::vector<double>> time;
  std::vector<double> weights, limit;
};
} // namespace

Expected<BranchResult> search::searchBranches(const cost::ModelDesc &pieces,
                                              const BranchShape &shape,
                                              const cluster::Cluster &c,
                                              const cost::CostModel &cm,
                                              const SearchOptions &o) {
  unsigned k = shape.branches;
  if (k < 2 || pieces.layers.size() != k + 2 ||
      shape.branchInputs.size() != k || shape.branchOutputBytes.size() != k)
    return createStringError(inconvertibleErrorCode(),
                             "branch placement: the model description has "
                             "%zu pieces for %u branches (expected a trunk, "
                             "the branches and a tail)",
                             pieces.layers.size(), k);
  unsigned N = c.numDevices();
  unsigned D = o.devices ? std::min(o.devices, N) : N;
  if (D == 0 || o.globalBatch == 0)
    return createStringError(inconvertibleErrorCode(),
                             "branch placement needs devices and a batch "
                             "(--dist-batch=N)");
  double count = std::pow(double(D), double(k + 1));
  if (count > double(kMaxBranchAssignments))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("branch placement weighs every assignment of the trunk and "
                "{0} branches to {1} devices ({1}^{2} = {3:E1}), more than "
                "{4}; plan for fewer devices (--dist-devices=N)",
                k, D, k + 1, count, kMaxBranchAssignments)
            .str());
  Pricer pricer(pieces, shape, c, cm, o, D);
  BranchResult r;
  r.shape = shape;
  r.batch = o.globalBatch;
  r.emptyTrunk = pieces.layers.front().ops.empty();
  double bestLatency = std::numeric_limits<double>::infinity();
  double bestSingle = bestLatency;
  std::vector<unsigned> a(k + 1, 0);
  BranchPlacement p;
  while (true) {
    ++r.weighed;
    if (pricer.price(a, p)) {
      if (p.latency < bestLatency) {
        bestLatency = p.latency;
        r.best = p;
      }
      if (llvm::all_equal(a) && p.latency < bestSingle) {
        bestSingle = p.latency;
        r.single = p;
      }
    } else {
      ++r.memoryPruned;
    }
    // The next assignment, the last branch counting fastest: all-zero
    // first, so a tie keeps the fewer, lower-numbered devices.
    unsigned i = k + 1;
    while (i > 0 && ++a[i - 1] == D)
      a[--i] = 0;
    if (i == 0)
      break;
  }
  if (bestLatency == std::numeric_limits<double>::infinity()) {
    double need = 0;
    for (const cost::LayerDesc &l : pieces.layers)
      need = std::max(need, l.params() * (o.memory.mixedPrecision ? 2 : 4));
    return createStringError(
        inconvertibleErrorCode(),
        formatv("no branch placement fits in memory: a piece's weights "
                "alone need {0}; use devices with more memory "
                "(--dist-memory-limit)",
                search::detail::humanBytes(need))
            .str());
  }
  return r;
}

static std::string devName(const cluster::Cluster &c, unsigned d) {
  return formatv("device {0} ({1})", d,
                 c.devices[c.groupOf(d).deviceIndex].name)
      .str();
}

void search::printBranches(const BranchResult &r, const cluster::Cluster &c,
                           raw_ostream &os) {
  const BranchPlacement &b = r.best;
  os << formatv("branch placement (one batch of {0}, {1} branches after the "
                "fork; {2} assignments weighed, {3} over memory):\n",
                r.batch, r.shape.branches, r.weighed, r.memoryPruned);
  if (r.emptyTrunk)
    os << formatv("  trunk   none: the branches read the model's inputs, "
                  "taken to be on {0}\n",
                  devName(c, b.devices[0]));
  else
    os << formatv("  trunk   on {0}: {1:F6} s\n", devName(c, b.devices[0]),
                  b.trunk);
  for (const BranchPlacement::DeviceTime &d : b.perDevice) {
    if (d.branches.empty())
      continue;
    std::string names;
    for (unsigned i : d.branches)
      names += (names.empty() ? "" : ", ") + r.shape.names[i];
    os << formatv("  {0}: {1}; starts {2:F6} s, computes {3:F6} s, outputs "
                  "at the trunk's device {4:F6} s\n",
                  devName(c, d.device), names, d.start, d.compute, d.arrive);
  }
  if (b.tail > 0)
    os << formatv("  tail    on {0}: {1:F6} s\n", devName(c, b.devices[0]),
                  b.tail);
  os << formatv("  latency {0:F6} s per batch (predicted)\n", b.latency);
  os << formatv("  one device ({0}): {1:F6} s; the placement is {2:F2}x as "
                "fast\n",
                devName(c, r.single.devices[0]), r.single.latency,
                r.single.latency / b.latency);
  if (r.chainLatency)
    os << formatv(
        "  best chain plan of the search ({0}): {1:F6} s; the placement is "
        "{2:F2}x as fast\n",
        r.chainPlan, *r.chainLatency, *r.chainLatency / b.latency);
  else
    os << "  no chain plan to compare: " << r.chainProblem << "\n";
  bool oneDevice = llvm::all_equal(b.devices);
  if (!r.recorded)
    os << "  recorded: the chain plan (the branch placement is not faster)\n";
  else if (oneDevice)
    os << "  recorded: the branch placement, every piece on device "
       << b.devices[0] << "\n";
  else
    os << "  recorded: the branch placement\n";
}

json::Value search::toJSON(const BranchResult &r, const cluster::Cluster &c) {
  auto placement = [&](const BranchPlacement &p) {
    json::Array devices;
    for (const BranchPlacement::DeviceTime &d : p.perDevice) {
      json::Array names;
      for (unsigned i : d.branches)
        names.push_back(r.shape.names[i]);
      devices.push_back(json::Object{
          {"device", d.device},
          {"kind", c.devices[c.groupOf(d.device).deviceIndex].name},
          {"branches", std::move(names)},
          {"start_s", d.start},
          {"compute_s", d.compute},
          {"outputs_at_trunk_s", d.arrive},
          {"weight_bytes", d.weightBytes}});
    }
    return json::Object{{"latency_s", p.latency},
                        {"trunk_s", p.trunk},
                        {"tail_s", p.tail},
                        {"piece_devices", json::Array(p.devices)},
                        {"devices", std::move(devices)}};
  };
  json::Object o{{"batch", r.batch},
                 {"branches", r.shape.branches},
                 {"pieces", json::Array(r.shape.names)},
                 {"weighed", static_cast<int64_t>(r.weighed)},
                 {"memory_pruned", static_cast<int64_t>(r.memoryPruned)},
                 {"best", placement(r.best)},
                 {"single_device", placement(r.single)},
                 {"recorded", r.recorded ? "branches" : "chain"}};
  if (r.chainLatency)
    o["chain"] =
        json::Object{{"plan", r.chainPlan}, {"latency_s", *r.chainLatency}};
  else
    o["chain"] = json::Object{{"problem", r.chainProblem}};
  return o;
}
