//===- RingAttention.h - Token-split attention as ring attention -*- C++
//-*-===//
//
// Part of DistOpt. After dist-context-parallel's token split, each
// attention reads the keys and values gathered whole over the context
// group (the all-gather form). Where the attention has the form the runtime's
// ring attention computes, it becomes one dist.ring_attention on the rank's
// own key and value blocks (docs/distributed.md, "Context parallelism").
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_DISTRIBUTE_RINGATTENTION_H
#define DISTOPT_PASSES_DISTRIBUTE_RINGATTENTION_H

#include "passes/Distribute/SplitValues.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace distopt::split {

/// What formRingAttentions did: the attentions it rewrote, and why the
/// first one it left in the all-gather form was left (empty: none).
struct RingAttentions {
  unsigned formed = 0;
  std::string firstKept;
};

/// Rewrites each attention of `func` that reads keys and values gathered
/// whole over a context group (`dist.all_gather` behind a `dist.tp_copy`,
/// as TokenSplit gathers them) into a dist.ring_attention over that group:
/// softmax(s (Q K^T) + mask) V with an optional scale (a multiply or divide
/// by a scalar constant), then an optional mask (an additive one, or a
/// `graph.where` that fills masked scores with at most -1e30), a softmax
/// along the keys and the product with V, each value read by the next op
/// only. The ring runs over the gather's group (and `dist.groups`). The
/// gathers nothing reads any more are erased.
RingAttentions formRingAttentions(mlir::func::FuncOp func);

} // namespace distopt::split

#endif // DISTOPT_PASSES_DISTRIBUTE_RINGATTENTION_H
