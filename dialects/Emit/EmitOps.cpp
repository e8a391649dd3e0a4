//===- EmitOps.cpp - Operations of the emission dialect ---------*- C++ -*-===//
//
// Part of DistOpt. The kernel op's verifier applies KernelRules.h.
//
//===----------------------------------------------------------------------===//
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Emit/KernelRules.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace distopt::emit;

#define GET_OP_CLASSES
#include "dialects/Emit/EmitOps.cpp.inc"

Operation *KernelOp::getRoot() {
  Block &b = getBody().front();
  auto y = dyn_cast<YieldOp>(b.getTerminator());
  return y ? y.getValue().getDefiningOp() : nullptr;
}

Operation *KernelOp::getAnchor() {
  if (getKind() != KernelKind::post_ops || getBody().empty() ||
      getBody().front().empty())
    return nullptr;
  Operation *first = &getBody().front().front();
  return isPostOpAnchor(first) ? first : nullptr;
}

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body takes " << body.getNumArguments()
                         << " arguments for " << getInputs().size()
                         << " inputs";
  for (auto [a, v] : llvm::zip(body.getArguments(), getInputs()))
    if (a.getType() != v.getType())
      return emitOpError() << "body argument #" << a.getArgNumber()
                           << " has type " << a.getType() << " but input is "
                           << v.getType();
  // An empty body has no terminator to ask for (getTerminator would read
  // past the end of the block: a fuzzed kernel crashed here).
  auto y = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!y)
    return emitOpError() << "body must end with emit.yield";
  if (y.getValue().getType() != getResult().getType())
    return emitOpError() << "yields " << y.getValue().getType()
                         << " but the kernel's result is "
                         << getResult().getType();
  Operation *root = y.getValue().getDefiningOp();
  if (!root || root->getBlock() != &body)
    return emitOpError() << "must yield a value its body computes";
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  switch (getKind()) {
  case KernelKind::loop: {
    auto shape =
        cast<RankedTensorType>(root->getResult(0).getType()).getShape();
    for (Operation *op : ops) {
      if (!isElementwiseOp(op) || op->getNumResults() != 1)
        return op->emitOpError()
               << "is not elementwise; a loop kernel holds only graph.unary, "
                  "binary, where, cast, clip and unary_grad";
      if (op == root)
        continue;
      Value r = op->getResult(0);
      if (!r.hasOneUse() ||
          cast<RankedTensorType>(r.getType()).getShape() != shape)
        return op->emitOpError()
               << "is fused into a loop kernel but its result has "
               << (r.hasOneUse() ? "another shape than the kernel's"
                                 : "more than one use");
    }
    return success();
  }
  case KernelKind::post_ops: {
    Operation *anchor = ops.empty() ? nullptr : ops.front();
    if (!anchor || !isPostOpAnchor(anchor))
      return emitOpError() << "post_ops kernel must start with an f32 "
                              "graph.matmul or 1-D or 2-D graph.conv";
    if (!llvm::all_of(anchor->getOperands(),
                      [](Value v) { return isa<BlockArgument>(v); }))
      return anchor->emitOpError() << "must read only the kernel's inputs";
    Value chain = anchor->getResult(0);
    for (Operation *op : llvm::drop_begin(ops)) {
      if (!chain.hasOneUse() || *chain.getUsers().begin() != op)
        return op->emitOpError() << "must be the only reader of the value "
                                    "before it in the post-op chain";
      if (!postOpsOf(op, chain, anchor))
        return op->emitOpError()
               << "has no oneDNN post-op form after " << anchor->getName()
               << " (an activation, or a binary op with a scalar, "
                  "per-channel or full-shape operand)";
      for (Value v : op->getOperands())
        if (v != chain && !isa<BlockArgument>(v))
          return op->emitOpError() << "must read the chain and kernel inputs "
                                      "only";
      chain = op->getResult(0);
    }
    if (chain.getDefiningOp() != root)
      return emitOpError() << "must yield the end of its post-op chain";
    return success();
  }
  case KernelKind::eltwise:
    if (ops.size() != 1 || !standaloneEltwise(ops[0]) ||
        !isa<BlockArgument>(ops[0]->getOperand(0)))
      return emitOpError() << "eltwise kernel holds one f32 graph.unary of a "
                              "kind the runtime's eltwise kernel computes";
    return success();
  }
  return success();
}
