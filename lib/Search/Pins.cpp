//===- Pins.cpp - Layers pinned to a device kind ----------------*- C++ -*-===//
//
// Part of DistOpt. `--dist-search=pin=0-3@KIND` keeps layers 0-3 (and with
// layer 0 the raw input) on devices of one kind: split training between an
// edge device and the cloud. The pins constrain the pipeline partition the
// search already runs (a stage holding a pinned layer on other devices
// costs infinity), so the search still chooses the split point, the
// micro-batching and the schedule; this file resolves the pins and reports
// what a plan puts on the pinned side (docs/search.md, "Edge-cloud split
// training").
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace distopt;
using namespace distopt::search;
using namespace distopt::search::detail;

static Error pinError(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(),
                           "--dist-search: " + msg.str());
}

std::vector<unsigned>
distopt::search::detail::stageKinds(const schedule::Plan &p,
                                    const cluster::Cluster &c, unsigned s) {
  if (c.devices.size() == 1)
    return {0};
  std::vector<unsigned> types;
  for (unsigned d = 0; d < p.replicasOf(s); ++d) {
    unsigned ty = c.groupOf(p.globalRank(s, d, 0)).deviceIndex;
    if (!llvm::is_contained(types, ty))
      types.push_back(ty);
  }
  return types;
}

Expected<PinCheck> PinCheck::resolve(ArrayRef<Pin> pins,
                                     const cost::ModelDesc &model,
                                     const cluster::Cluster &c,
                                     schedule::Mode mode) {
  PinCheck k;
  if (pins.empty())
    return k;
  if (mode == schedule::Mode::Infer)
    return pinError("pin= constrains training plans (the edge-cloud "
                    "split); drop it or plan training (--dist-mode=train)");
  const unsigned n = model.layers.size();
  std::vector<int> kindOfLayer(n, -1);
  for (const Pin &pin : pins) {
    auto it = llvm::find_if(c.devices, [&](const cluster::DeviceSpec &d) {
      return d.name == pin.kind;
    });
    if (it == c.devices.end()) {
      std::string known;
      for (const cluster::DeviceSpec &d : c.devices)
        known += (known.empty() ? "" : ", ") + d.name;
      return pinError("pin=" + Twine(pin.first) + "-" + Twine(pin.last) + "@" +
                      pin.kind + ": cluster '" + c.name +
                      "' has no device kind '" + pin.kind +
                      "'; its kinds are " + known +
                      " (pin to one of them, or give a cluster with that "
                      "device)");
    }
    unsigned ty = it - c.devices.begin();
    if (pin.last >= n)
      return pinError(formatv("pin={0}-{1}@{2}: model '{3}' has {4} layers "
                              "(0-{5}); pin layers within them "
                              "(--dist-print-model lists them)",
                              pin.first, pin.last, pin.kind, model.name, n,
                              n - 1)
                          .str());
    for (unsigned l = pin.first; l <= pin.last; ++l) {
      if (kindOfLayer[l] >= 0 && unsigned(kindOfLayer[l]) != ty)
        return pinError(formatv("layer {0} is pinned to both {1} and {2}; "
                                "pin each layer to one device kind",
                                l, c.devices[kindOfLayer[l]].name, pin.kind)
                            .str());
      kindOfLayer[l] = ty;
    }
    if (!llvm::is_contained(k.kinds, ty))
      k.kinds.push_back(ty);
    k.text += formatv("{0}layers {1}-{2} on {3}", k.text.empty() ? "" : ", ",
                      pin.first, pin.last, pin.kind)
                  .str();
  }
  for (unsigned ty : k.kinds) {
    std::vector<unsigned> prefix(n + 1, 0);
    for (unsigned l = 0; l < n; ++l)
      prefix[l + 1] = prefix[l] + (kindOfLayer[l] == int(ty));
    k.count.push_back(std::move(prefix));
  }
  return k;
}

bool PinCheck::allows(ArrayRef<unsigned> types, unsigned b, unsigned e) const {
  for (auto [i, ty] : llvm::enumerate(kinds))
    if (count[i][e] > count[i][b] && (types.size() != 1 || types[0] != ty))
      return false;
  return true;
}

bool PinCheck::allows(const schedule::Plan &p, const cluster::Cluster &c,
                      unsigned numLayers) const {
  if (empty())
    return true;
  for (unsigned vs = 0; vs < p.numVirtualStages(); ++vs) {
    auto [b, e] = p.stageLayers(vs, numLayers);
    if (!allows(stageKinds(p, c, p.pipelineStage(vs)), b, e))
      return false;
  }
  return true;
}

/// Whether every device of pipeline stage \p s of \p p is of kind \p ty.
static bool stageOnKind(const schedule::Plan &p, const cluster::Cluster &c,
                        unsigned s, unsigned ty) {
  std::vector<unsigned> kinds = stageKinds(p, c, s);
  return kinds.size() == 1 && kinds[0] == ty;
}

std::vector<PinnedSide> search::pinnedSides(const Candidate &cand,
                                            ArrayRef<Pin> pins,
                                            const cost::ModelDesc &model,
                                            const cluster::Cluster &c) {
  std::vector<PinnedSide> out;
  const schedule::Plan &p = cand.sim.plan;
  const schedule::PipelineCosts &costs = cand.sim.costs;
  const unsigned n = model.layers.size(), V = p.numVirtualStages();
  for (const Pin &pin : pins) {
    auto it = llvm::find_if(c.devices, [&](const cluster::DeviceSpec &d) {
      return d.name == pin.kind;
    });
    if (it == c.devices.end())
      continue;
    const unsigned ty = it - c.devices.begin();
    auto side = llvm::find_if(
        out, [&](const PinnedSide &s) { return s.kind == pin.kind; });
    if (side != out.end()) {
      side->pinned.emplace_back(pin.first, pin.last);
      continue;
    }
    PinnedSide s;
    s.kind = pin.kind;
    s.pinned.emplace_back(pin.first, pin.last);
    s.memoryCapacity = it->memoryBytes;
    for (unsigned vs = 0; vs < V; ++vs) {
      if (!stageOnKind(p, c, p.pipelineStage(vs), ty))
        continue;
      auto [b, e] = p.stageLayers(vs, n);
      if (!s.layers.empty() && s.layers.back().second + 1 == b)
        s.layers.back().second = e - 1;
      else
        s.layers.emplace_back(b, e - 1);
    }
    // Each micro-batch crosses a boundary between a stage on the kind and
    // one off it once forward (its activation) and once backward (its
    // gradient); every tensor and context rank sends its part.
    for (unsigned vs = 0; vs + 1 < V; ++vs) {
      unsigned r = p.pipelineStage(vs), r2 = p.pipelineStage(vs + 1);
      if (r == r2)
        continue;
      double perMicrobatch = (costs.stages[vs].sendNextBytes +
                              costs.stages[vs + 1].sendPrevBytes) *
                             p.tp * p.cp;
      auto onKind = [&](unsigned stage, unsigned replica) {
        return c.groupOf(p.globalRank(stage, replica, 0)).deviceIndex == ty;
      };
      if (p.replicated()) {
        // Micro-batch i runs on replica i mod R of every stage.
        for (unsigned i = 0; i < p.numMicrobatches; ++i)
          if (onKind(r, i % p.replicasOf(r)) !=
              onKind(r2, i % p.replicasOf(r2)))
            s.linkBytes += perMicrobatch;
        continue;
      }
      for (unsigned d = 0; d < p.dp; ++d) {
        if (onKind(r, d) == onKind(r2, d))
          continue;
        unsigned m = r < cand.replicaMicrobatches.size() &&
                             d < cand.replicaMicrobatches[r].size()
                         ? cand.replicaMicrobatches[r][d]
                         : p.numMicrobatches;
        s.linkBytes += perMicrobatch * m;
      }
    }
    const std::vector<double> &peaks = cand.sim.result.peakMemoryBytes;
    for (unsigned l = 0; l < peaks.size(); ++l) {
      unsigned stage = costs.stageOfList(l);
      bool on = p.replicated()
                    ? c.groupOf(l * p.tp).deviceIndex == ty
                    : llvm::is_contained(stageKinds(p, c, stage), ty);
      if (on)
        s.peakMemory = std::max(s.peakMemory, peaks[l]);
    }
    out.push_back(std::move(s));
  }
  return out;
}
