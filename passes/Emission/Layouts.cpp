//===- Layouts.cpp - Views and layouts of values ----------------*- C++ -*-===//
//
// Part of DistOpt. Decides which results are views of their operand's
// memory (no copy): reshape, flatten and inference dropout always are, as
// long as the dims they merge are contiguous in memory; their result gets
// `#emit.buffer<view, ...>` with the strides it is read with.
//
//===----------------------------------------------------------------------===//
#include "passes/Emission/EmissionSteps.h"

#include "dialects/Emit/KernelRules.h"
#include "dialects/Emit/MemoryPlan.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::emit;
namespace g = distopt::graph;

/// Records `layout` as the view buffer of `op`'s only result.
static void setView(Operation *op, const ViewLayout &layout) {
  auto t = cast<RankedTensorType>(op->getResult(0).getType());
  SmallVector<int64_t> strides;
  if (ArrayRef<int64_t>(layout.strides) !=
      ArrayRef<int64_t>(rowMajorStrides(t.getShape())))
    strides = layout.strides;
  op->setAttr(
      kBuffersAttr,
      ArrayAttr::get(op->getContext(),
                     {BufferAttr::get(op->getContext(), BufferKind::view,
                                      layout.offset, 0, strides)}));
}

void emission::assignLayouts(Block &body, const EmissionOptions &options) {
  for (Operation &op : body) {
    if (!isa<g::ReshapeOp, g::FlattenOp, g::DropoutOp>(op))
      continue;
    std::optional<ViewLayout> v =
        viewLayout(&op, 0, stridesOf(op.getOperand(0)));
    if (v)
      setView(&op, *v);
  }
}
