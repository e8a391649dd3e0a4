//===- Devices.cpp - How many of the cluster's devices to use ---*- C++ -*-===//
//
// Part of DistOpt. A plan may use fewer devices than the cluster has
// (`--dist-devices=N`): the search runs on the cluster's first N devices
// (whole nodes first, then part of the next), the rest stay idle and are
// reported. When the model is too small for the cluster (the best plan on
// every device is barely faster than one device), the search says so and
// names the device count that comes within 10% of the best time.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace distopt;
using namespace distopt::search;

cluster::Cluster search::firstDevices(const cluster::Cluster &c, unsigned n) {
  cluster::Cluster out = c;
  out.groups.clear();
  for (const cluster::NodeGroup &g : c.groups) {
    if (n == 0)
      break;
    cluster::NodeGroup whole = g;
    whole.nodes = std::min(g.nodes, n / g.devicesPerNode);
    if (whole.nodes) {
      out.groups.push_back(whole);
      n -= whole.nodes * g.devicesPerNode;
    }
    if (whole.nodes < g.nodes && n > 0 && n < g.devicesPerNode) {
      cluster::NodeGroup part = g;
      part.nodes = 1;
      part.devicesPerNode = n;
      out.groups.push_back(part);
      n = 0;
    }
  }
  return out;
}

double search::objectiveTime(const Candidate &c, Mode mode,
                             InferObjective objective) {
  if (mode == Mode::Train)
    return c.sim.result.iterationTime;
  return objective == InferObjective::Latency
             ? c.latency
             : 1 / std::max(c.streamThroughput, 1e-300);
}

/// The search on the first `n` devices of `c` (all when n is 0).
static Expected<SearchResult> searchOn(const cost::ModelDesc &model,
                                       const cluster::Cluster &c,
                                       const cost::CostModel &cm,
                                       const SearchOptions &o, unsigned n) {
  cluster::Cluster used = n && n < c.numDevices() ? firstDevices(c, n) : c;
  Expected<SearchResult> r = search::detail::searchAll(model, used, cm, o);
  if (r) {
    r->devicesUsed = used.numDevices();
    r->devicesTotal = c.numDevices();
  }
  return r;
}

Expected<SearchResult> search::searchPlan(const cost::ModelDesc &model,
                                          const cluster::Cluster &c,
                                          const cost::CostModel &cm,
                                          const SearchOptions &o) {
  if (o.devices > c.numDevices())
    return createStringError(
        inconvertibleErrorCode(),
        formatv("--dist-devices={0} asks for more devices than cluster '{1}' "
                "has ({2}); give at most {2}",
                o.devices, c.name, c.numDevices())
            .str());
  Expected<SearchResult> r = searchOn(model, c, cm, o, o.devices);
  if (!r || !o.adviseDevices || r->devicesUsed < 2)
    return r;
  // Too small for the cluster? Compare with one device, then find the
  // smallest power-of-two count within 10% of the best.
  SearchOptions quiet = o;
  quiet.progress = nullptr;
  quiet.alternatives = 0;
  auto time = [&](const SearchResult &s) {
    return objectiveTime(s.best, s.mode, s.objective);
  };
  Expected<SearchResult> one = searchOn(model, c, cm, quiet, 1);
  if (!one) {
    consumeError(one.takeError());
    return r;
  }
  double best = time(*r), single = time(*one);
  r->scaling = {{1, single}};
  double efficiency = single / (best * r->devicesUsed);
  if (efficiency >= 0.5)
    return r;
  for (unsigned k = 2; k < r->devicesUsed; k *= 2) {
    Expected<SearchResult> s = searchOn(model, c, cm, quiet, k);
    if (!s) {
      consumeError(s.takeError());
      continue;
    }
    r->scaling.push_back({k, time(*s)});
  }
  r->scaling.push_back({r->devicesUsed, best});
  double fastest = best;
  for (auto &[k, t] : r->scaling)
    fastest = std::min(fastest, t);
  for (auto &[k, t] : r->scaling)
    if (t <= 1.1 * fastest) {
      r->suggestedDevices = k;
      break;
    }
  r->efficiency = efficiency;
  return r;
}

void search::printDevicesUsed(const SearchResult &r, raw_ostream &os) {
  if (r.devicesUsed < r.devicesTotal)
    os << formatv("  devices          {0} of the cluster's {1} ({2} idle)\n",
                  r.devicesUsed, r.devicesTotal,
                  r.devicesTotal - r.devicesUsed);
}

void search::printDeviceAdvice(const SearchResult &r, raw_ostream &os) {
  if (!r.suggestedDevices)
    return;
  const char *unit = r.mode == Mode::Train ? "per iteration"
                     : r.objective == InferObjective::Latency
                         ? "per batch"
                         : "per sample";
  os << formatv("note: the model is too small for {0} devices: the best plan "
                "on them takes {1:F4} ms {2}, one device {3:F4} ms (parallel "
                "efficiency {4:F0}%).",
                r.devicesUsed, r.scaling.back().second * 1e3, unit,
                r.scaling.front().second * 1e3, 100 * r.efficiency);
  os << " Best ms by device count:";
  for (auto [i, kt] : llvm::enumerate(r.scaling))
    os << formatv("{0} {1}: {2:F4}", i ? "," : "", kt.first, kt.second * 1e3);
  if (r.suggestedDevices < r.devicesUsed)
    os << formatv(". {0} device(s) come within 10% of the best: plan for "
                  "them with --dist-devices={0} and leave the others idle, "
                  "or give this cluster a larger model or batch\n",
                  r.suggestedDevices);
  else
    os << "\n";
}
