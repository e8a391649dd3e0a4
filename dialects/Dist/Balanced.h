//===- Balanced.h - Context parallelism's load-balanced split ---*- C++ -*-===//
//
// Part of DistOpt. `dist.balanced`, a unit attribute on the collectives
// that split or join a sequence over a context-parallel group
// (`dist.all_slice`, `dist.all_gather`, `dist.reduce_scatter`) and on
// `dist.ring_attention` / `dist.ring_attention_grad`: the sequence is cut
// into 2 x group-size chunks and device i's part is chunks i and
// 2 x group-size - 1 - i, in that order (Megatron-LM's load-balanced
// split for causal attention), rather than block i of group-size. On the
// slices, gathers and reduce-scatters the whole side's `axis` must divide
// by 2 x group-size with every dimension before it 1 (the chunks are runs
// of the flattened elements); the ring's blocks must be even. The
// dialect's attribute verifier checks both (DistVerify.cpp).
// dist-context-parallel sets it, dist-autodiff carries it to the backward
// ops, and codegen and the runtime move the chunks
// (docs/distributed.md, "Context parallelism").
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECTS_DIST_BALANCED_H
#define DISTOPT_DIALECTS_DIST_BALANCED_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace distopt::dist {

inline constexpr llvm::StringLiteral kBalancedAttr = "dist.balanced";

/// Whether `op`'s part of the sequence is the balanced pair of chunks.
inline bool isBalanced(mlir::Operation *op) {
  return op->hasAttr(kBalancedAttr);
}

/// Marks `op` balanced (`on`), or not.
inline void setBalanced(mlir::Operation *op, bool on) {
  if (on)
    op->setAttr(kBalancedAttr, mlir::UnitAttr::get(op->getContext()));
  else
    op->removeAttr(kBalancedAttr);
}

} // namespace distopt::dist

#endif // DISTOPT_DIALECTS_DIST_BALANCED_H
