//===- CostSignatures.cpp - Profile keys for generated programs -*- C++ -*-===//
//
// Part of DistOpt. A program built with dist-compile writes its measured op
// times (`--profile-json`) as the cost model's profile database, filed
// under the signature the cost model gives each op (the layer analysis):
// the same function computes both, so the planner finds what the program
// measured. In passes/Planning beside the analysis, so that lib/Codegen
// does not link passes/; dist-compile calls it before emission.
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/LayerAnalysis.h"

#include "dialects/Emit/EmitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace distopt::planning;

void distopt::planning::annotateCostSignatures(ModuleOp module) {
  module.walk([&](func::FuncOp func) {
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    // A function the cost model cannot price (no sample dimension, such as
    // an optimizer step) simply gets no signatures.
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    llvm::DenseMap<Operation *, std::string> signatures;
    LayerAnalysisOptions options;
    options.signatures = &signatures;
    if (failed(analyzeLayers(func, options)))
      return;
    Builder b(func.getContext());
    for (auto &[op, sig] : signatures)
      op->setAttr(emit::kCostSignatureAttr, b.getStringAttr(sig));
  });
}
