//===- NormalizedMatmuls.h - Matmuls normalized over features ---*- C++ -*-===//
//
// Part of DistOpt. A weighted matmul whose output is normalized over its
// features (DeepSeek's latent attention: the down-projections q_a_proj and
// kv_a_proj_with_mqa, read by their RMSNorms) stays whole under tensor
// parallelism, since splitting its columns would need a gather before the
// norm; under sequence parallelism it runs on the rank's tokens, as
// Megatron-LM runs them. The one decision both the cost model
// (LayerAnalysis: the op's `dist.tp` role) and dist-tensor-parallel's
// sequence-parallel rewrite (TokenSplit) follow. docs/cost-model.md and
// docs/distributed.md, "Multi-head latent attention".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_PLANNING_NORMALIZEDMATMULS_H
#define DISTOPT_PASSES_PLANNING_NORMALIZEDMATMULS_H

#include "dialects/Graph/GraphOps.h"

namespace distopt::planning {

/// True when `v`, through views and splits, is normalized over its last
/// axis (LayerNorm, RMSNorm).
inline bool normalizedOverFeatures(mlir::Value v) {
  return llvm::any_of(v.getUsers(), [](mlir::Operation *user) {
    if (mlir::isa<graph::LayerNormOp, graph::RMSNormOp>(user))
      return true;
    if (mlir::isa<graph::ReshapeOp, graph::SplitOp, graph::SliceOp>(user))
      return llvm::any_of(user->getResults(), normalizedOverFeatures);
    return false;
  });
}

} // namespace distopt::planning

#endif // DISTOPT_PASSES_PLANNING_NORMALIZEDMATMULS_H
