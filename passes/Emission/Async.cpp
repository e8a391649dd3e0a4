//===- Async.cpp - All-reduces that overlap the ops before their reader ---===//
//
// Part of DistOpt. dist-data-parallel reduces each gradient right after the
// backward made it; the optimizer reads it only after the whole backward.
// Marked emit.async, such an all-reduce is started where it stands and
// waited for right before its first reader, so the backward of the earlier
// layers runs while it moves data (the overlap PyTorch DDP's buckets and
// Megatron's overlap_grad_reduce give). Its operand stays live until the
// wait (BlockLiveness).
//
//===----------------------------------------------------------------------===//
#include "passes/Emission/EmissionSteps.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/EmitDialect.h"

using namespace mlir;
using namespace distopt;

void emission::markAsync(Block &body, const EmissionOptions &options) {
  if (!options.async)
    return;
  for (auto op : body.getOps<dist::AllReduceOp>()) {
    Operation *next = op->getNextNode();
    bool readNext = false;
    for (Operation *user : op.getResult().getUsers())
      if (body.findAncestorOpInBlock(*user) == next)
        readNext = true;
    // Nothing to overlap when the next op reads it (or ends the body).
    if (readNext || !next || next->hasTrait<OpTrait::IsTerminator>())
      continue;
    op->setAttr(emit::kAsyncAttr, UnitAttr::get(op->getContext()));
  }
}
