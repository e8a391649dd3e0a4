//===- Fusion.cpp - Ops evaluated inside their user's loop ------*- C++ -*-===//
//
// Part of DistOpt. dist-prepare-for-emission decides which elementwise ops
// are computed inside their user's generated loop (passes/Emission/
// Kernels.cpp): they are the ops of an `emit.kernel loop` region other than
// the one it yields. The printer only collects them.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Emit/EmitDialect.h"

using namespace mlir;
namespace emit = distopt::emit;

void distopt::codegen::computeFusion(Block &body,
                                     llvm::DenseSet<Operation *> &fused) {
  for (Operation &op : body) {
    auto kernel = dyn_cast<emit::KernelOp>(op);
    if (!kernel || kernel.getKind() != emit::KernelKind::loop)
      continue;
    Operation *root = kernel.getRoot();
    for (Operation &inner : kernel.getBody().front().without_terminator())
      if (&inner != root)
        fused.insert(&inner);
  }
}
