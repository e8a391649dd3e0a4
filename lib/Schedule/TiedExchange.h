//===- TiedExchange.h - Tied weights' gradients between ranks --*- C++ -*-===//
//
// Part of DistOpt. What a weight read on two pipeline ranks costs once a
// step (a table tied to the LM head: the lookup on the first rank, the
// head on the last), as dist-partition's programs run it
// (passes/Partition/PartitionTrain.cpp, "tied weight's gradient"): each
// reading rank sums its part of the gradient over the step's
// micro-batches (the head in its transposed layout, transposed to the
// table's once), sends it once to the rank that updates the weight, which
// adds the parts, syncs and updates, and sends the updated weight back
// once. Per tensor rank its shard; docs/cost-model.md "Tied weights".
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_SCHEDULE_TIEDEXCHANGE_H
#define DIST_LIB_SCHEDULE_TIEDEXCHANGE_H

#include "lib/Cost/CostModel.h"
#include "lib/Schedule/Plan.h"

#include <array>
#include <vector>

namespace distopt::schedule {

struct TiedExchange {
  /// Per virtual stage, one device: the parameters of weights it reads that
  /// a stage on another pipeline rank updates. It holds them and its
  /// gradient part's running sum, not their optimizer state; the owner's
  /// replicas sync the parts' sum, so its own data-parallel sync leaves
  /// them out.
  std::vector<cost::ParamSplit> copies;
  /// Per action list (pipeline rank, or slot of a replicated plan), one
  /// device, once a step: bytes it sends per link level (its parts to the
  /// owners, and the updated weights to the readers), and the time of its
  /// messages both ways and of the transposes of its parts (an LM head's
  /// part is summed in the head's layout, [h, V/tp], and transposed to the
  /// table's once a step).
  std::vector<std::array<double, cluster::kNumLinkLevels>> sentBytes;
  std::vector<double> time;

  /// Bytes list \p list sends once a step over all link levels.
  double sent(unsigned list) const;
};

/// The exchanges of \p model's tied weights under \p plan on \p cluster,
/// each gradient part and weight \p elemBytes per element (the programs
/// send the master type, f32), the transposes timed by \p cm. None under
/// the asynchronous schedules, whose programs refuse a weight two stages
/// read (each stage keeps its own versions): their costs keep each
/// reader's copy as its own weight. With per-stage replicas the owner's
/// first replica receives every reading replica's part and sends each the
/// updated weight.
TiedExchange tiedExchange(const Plan &plan, const cost::ModelDesc &model,
                          const cluster::Cluster &cluster,
                          const cost::CostModel &cm, double elemBytes);

} // namespace distopt::schedule

#endif // DIST_LIB_SCHEDULE_TIEDEXCHANGE_H
