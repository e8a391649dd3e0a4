//===- LayerTimes.h - Per-layer times of a model, computed once -*- C++ -*-===//
//
// The search costs thousands of plans of one model: the same layers under a
// few hundred configurations (device kind, tp/cp/ep groups, micro-batch,
// recomputation). LayerTimesCache computes each distinct layer's times once
// per configuration; a range is the sum of its layers' times in layer
// order, which is what CostModel::rangeTimes computes, bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_COST_LAYERTIMES_H
#define DISTOPT_LIB_COST_LAYERTIMES_H

#include "lib/Cost/CostModel.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace distopt::cost {

/// Everything about a layer that its times and memory depend on (not its
/// or its ops' names), as bytes: two layers with the same key cost the
/// same under every configuration.
std::string layerCostKey(const LayerDesc &layer);

/// Per-layer times of one model under one cost model. The model, the cost
/// model and the devices asked about must outlive the cache and not change
/// while it lives (a device is known by its address).
class LayerTimesCache {
public:
  LayerTimesCache(const ModelDesc &model, const CostModel &cm);
  // lastEntry points into entries: a copy would point into the original's.
  LayerTimesCache(const LayerTimesCache &) = delete;
  LayerTimesCache(LayerTimesCache &&) = default;

  /// The first layer with the same costs as layer \p l (its class).
  unsigned classOf(unsigned l) const { return layerClass[l]; }
  /// How many distinct layers (classes) the model has.
  unsigned classCount() const { return numClasses; }
  /// Times of layer \p l: cm.layerTimes(model.layers[l], dev, x).
  const RangeTimes &layer(unsigned l, const cluster::DeviceSpec &dev,
                          const ExecConfig &x);
  /// Calls \p f(l, layer(l, dev, x)) for the layers l of [begin, end) in
  /// order, with one lookup of the configuration (a per-layer lookup
  /// compares its fields each time).
  template <typename F>
  void forEachLayer(unsigned begin, unsigned end,
                    const cluster::DeviceSpec &dev, const ExecConfig &x,
                    F &&f) {
    Entry &e = entry(dev, x);
    for (unsigned l = begin; l < end && l < model.layers.size(); ++l)
      f(l, of(e, l, dev, x));
  }
  /// Times of layers [begin, end): cm.rangeTimes(model, begin, end, dev, x).
  RangeTimes range(unsigned begin, unsigned end, const cluster::DeviceSpec &dev,
                   const ExecConfig &x);
  /// paramSplit(model, ranges, tp, cp, ep), with each distinct layer's
  /// untied parameters counted once per (tp, cp, ep): the same bits.
  ParamSplit params(llvm::ArrayRef<LayerRange> ranges, unsigned tp, unsigned cp,
                    unsigned ep);

private:
  /// One configuration's times, per class (computed on first use; indexed
  /// by denseClass, so an entry holds a few classes' times, not every
  /// layer's: the search keeps tens of thousands of configurations).
  using Entry = std::vector<std::optional<RangeTimes>>;
  Entry &entry(const cluster::DeviceSpec &dev, const ExecConfig &x);
  const RangeTimes &of(Entry &e, unsigned l, const cluster::DeviceSpec &dev,
                       const ExecConfig &x);

  const ModelDesc &model;
  const CostModel &cm;
  std::vector<unsigned> layerClass;
  /// Per layer, its class numbered 0, 1, ... in order of first appearance.
  std::vector<unsigned> denseClass;
  unsigned numClasses = 0;
  /// Per layer, its ops tied to another layer (few: embeddings and heads).
  std::vector<std::vector<const OpDesc *>> tiedOps;
  /// Per (tp, cp, ep), each class's untied parameters (computed on first
  /// use; indexed by denseClass).
  std::map<std::tuple<unsigned, unsigned, unsigned>,
           std::vector<std::optional<ParamSplit>>>
      untied;
  std::unordered_map<std::string, Entry> entries;
  /// The key of the last lookup (reused: no allocation per lookup).
  std::string keyBuffer;
  /// The last configuration looked up and its entry: the search asks for
  /// one configuration's layers in a row, so most lookups compare a few
  /// fields instead of building and hashing a key.
  const cluster::DeviceSpec *lastDev = nullptr;
  ExecConfig lastX;
  Entry *lastEntry = nullptr;
};

} // namespace distopt::cost

#endif // DISTOPT_LIB_COST_LAYERTIMES_H
