//===- Fusion.cpp - Elementwise chains evaluated in one loop ----*- C++ -*-===//
//
// Part of DistOpt. Decides which elementwise ops are computed inside their
// user's generated loop instead of into a buffer of their own. An op is fused
// into its user when its result has exactly one use, the user is elementwise
// too, and both results have the same shape: then the producer's value at
// element i is exactly what the user reads at element i, so a chain
// `x * s + b -> gelu -> * y` becomes one pass over memory with the
// intermediates in registers. A producer with several users, or one whose
// result the user broadcasts, is materialized (fusing it would recompute it
// per use or per broadcast element).
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;

void distopt::codegen::computeFusion(Block &body,
                                     llvm::DenseSet<Operation *> &fused) {
  for (Operation &op : body) {
    if (!isElementwise(&op) || op.getNumResults() != 1)
      continue;
    Value result = op.getResult(0);
    if (!result.hasOneUse())
      continue;
    Operation *user = *result.getUsers().begin();
    if (user->getBlock() != &body || !isElementwise(user))
      continue;
    if (result.getType() != user->getResult(0).getType() &&
        llvm::cast<RankedTensorType>(result.getType()).getShape() !=
            llvm::cast<RankedTensorType>(user->getResult(0).getType())
                .getShape())
      continue;
    fused.insert(&op);
  }
}
