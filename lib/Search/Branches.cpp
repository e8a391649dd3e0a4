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

/// Whether the first \p D devices of \p c are interchangeable: one kind,
/// and one link (bandwidth and latency) between any two.
static bool interchangeable(const cluster::Cluster &c, unsigned D) {
  if (D < 2)
    return true;
  unsigned kind = c.groupOf(0).deviceIndex;
  cluster::LinkLevel level = c.levelBetween(0, 1);
  const cluster::LinkSpec &first = c.link(level, 0);
  for (unsigned x = 0; x < D; ++x) {
    if (c.groupOf(x).deviceIndex != kind)
      return false;
    for (unsigned y = 0; y < D; ++y) {
      if (x == y)
        continue;
      if (c.levelBetween(x, y) != level)
        return false;
      const cluster::LinkSpec &l = c.link(level, x);
      if (l.bandwidth != first.bandwidth || l.latency != first.latency)
        return false;
    }
  }
  return true;
}

/// Placements the symmetric search weighs: groupings of \p k branches into
/// at most \p D groups (Stirling numbers of the second kind), each with
/// every choice of the trunk device's group, or none while a device is
/// left for every group.
static double partitionCount(unsigned k, unsigned D) {
  // S[j]: groupings of the branches so far into j groups.
  std::vector<double> S(D + 1, 0);
  S[0] = 1;
  for (unsigned n = 1; n <= k; ++n)
    for (unsigned j = std::min(n, D); j >= 1; --j)
      S[j] = j * S[j] + S[j - 1];
  S[0] = 0;
  double total = 0;
  for (unsigned j = 1; j <= D; ++j)
    total += S[j] * (j + (j < D ? 1 : 0));
  return total;
}

Expected<BranchResult>
search::searchBranches(const cost::ModelDesc &pieces, const BranchShape &shape,
                       const cluster::Cluster &c, const cost::CostModel &cm,
                       const SearchOptions &o, bool exhaustive) {
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
  bool symmetric = !exhaustive && interchangeable(c, D);
  double count =
      symmetric ? partitionCount(k, D) : std::pow(double(D), double(k + 1));
  if (count > double(kMaxBranchAssignments))
    return createStringError(
        inconvertibleErrorCode(),
        symmetric
            ? formatv("branch placement weighs every grouping of {0} "
                      "branches on {1} interchangeable devices ({2:E1}), "
                      "more than {3}; plan for fewer devices "
                      "(--dist-devices=N)",
                      k, D, count, kMaxBranchAssignments)
                  .str()
            : formatv("branch placement weighs every assignment of the trunk "
                      "and {0} branches to {1} devices ({1}^{2} = {3:E1}), "
                      "more than {4}; plan for fewer devices "
                      "(--dist-devices=N)",
                      k, D, k + 1, count, kMaxBranchAssignments)
                  .str());
  Pricer pricer(pieces, shape, c, cm, o, D);
  BranchResult r;
  r.shape = shape;
  r.batch = o.globalBatch;
  r.emptyTrunk = pieces.layers.front().ops.empty();
  r.symmetric = symmetric;
  double bestLatency = std::numeric_limits<double>::infinity();
  double bestSingle = bestLatency;
  BranchPlacement p;
  auto consider = [&](ArrayRef<unsigned> a) {
    ++r.weighed;
    if (!pricer.price(a, p)) {
      ++r.memoryPruned;
      return;
    }
    if (p.latency < bestLatency) {
      bestLatency = p.latency;
      r.best = p;
    }
    if (llvm::all_equal(a) && p.latency < bestSingle) {
      bestSingle = p.latency;
      r.single = p;
    }
  };
  std::vector<unsigned> a(k + 1, 0);
  if (symmetric) {
    // Interchangeable devices: which branches share a device is what
    // matters. For each grouping of the branches (a restricted growth
    // string: g[i] <= max(g[0..i-1]) + 1) and each choice of the group the
    // trunk's device runs (or none), the other groups go to devices 1, 2,
    // ... in the order Jackson's rule finds best for when the last outputs
    // arrive (the sends are one machine, compute plus the way back each
    // job's delivery time): the longest delivery first.
    std::vector<unsigned> g(k, 0);
    while (true) {
      unsigned groups = *llvm::max_element(g) + 1;
      std::vector<double> delivery(groups, 0), outBytes(groups, 0);
      for (unsigned i = 0; i < k; ++i) {
        delivery[g[i]] += pricer.time[std::min(1u, D - 1)][i + 1];
        outBytes[g[i]] += shape.branchOutputBytes[i];
      }
      for (unsigned j = 0; j < groups; ++j)
        delivery[j] += pricer.transfer(0, std::min(1u, D - 1), outBytes[j]);
      for (unsigned home = 0; home <= groups; ++home) {
        unsigned remote = groups - (home < groups);
        if (remote > D - 1)
          continue;
        std::vector<unsigned> order;
        for (unsigned j = 0; j < groups; ++j)
          if (j != home)
            order.push_back(j);
        llvm::stable_sort(order, [&](unsigned x, unsigned y) {
          return delivery[x] > delivery[y];
        });
        std::vector<unsigned> deviceOf(groups, 0);
        for (auto [rank, j] : llvm::enumerate(order))
          deviceOf[j] = rank + 1;
        a[0] = 0;
        for (unsigned i = 0; i < k; ++i)
          a[i + 1] = deviceOf[g[i]];
        consider(a);
      }
      // The next grouping, at most D groups.
      int i = int(k) - 1;
      for (; i >= 1; --i) {
        unsigned m = *std::max_element(g.begin(), g.begin() + i);
        if (g[i] <= m && g[i] + 1 < D) {
          ++g[i];
          std::fill(g.begin() + i + 1, g.end(), 0);
          break;
        }
      }
      if (i < 1)
        break;
    }
  } else {
    while (true) {
      consider(a);
      // The next assignment, the last branch counting fastest: all-zero
      // first, so a tie keeps the fewer, lower-numbered devices.
      unsigned i = k + 1;
      while (i > 0 && ++a[i - 1] == D)
        a[--i] = 0;
      if (i == 0)
        break;
    }
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
                "fork; {2} placements weighed ({3}), {4} over memory):\n",
                r.batch, r.shape.branches, r.weighed,
                r.symmetric ? "branch groupings: the devices are "
                              "interchangeable"
                            : "every assignment",
                r.memoryPruned);
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
                 {"interchangeable_devices", r.symmetric},
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
