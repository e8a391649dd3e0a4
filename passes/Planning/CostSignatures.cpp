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

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace distopt::planning;

/// The cost model prices an op's backward under the op's own signature
/// (its bwd_input_s and bwd_weight_s), but a training step runs it as other
/// ops (dX and dW matmuls, a bias reduction) at the forward op's location
/// (`fused<"gradient">[loc]`). Each such op gets the signature of the one
/// forward op at its location and that op's instance number, so
/// `--profile-json` adds up the ops of one forward op per phase. Ops at a
/// location no forward op or several own keep their own signature. Numbers
/// are kept, and so are the names of the ops in \p namedBefore (named by an
/// earlier call).
static void
fileBackwardUnderForward(func::FuncOp func,
                         const llvm::DenseSet<Operation *> &namedBefore) {
  namespace emit = distopt::emit;
  llvm::DenseMap<Location, Operation *> forwardAt;
  llvm::DenseSet<Location> ambiguous;
  llvm::DenseMap<Operation *, int64_t> instance;
  int64_t next = 0;
  auto phaseOf = [](Operation *op) {
    auto p = op->getAttrOfType<StringAttr>("graph.phase");
    return p ? p.getValue() : StringRef();
  };
  auto numberOf = [](Operation *op) -> std::optional<int64_t> {
    if (auto n = op->getAttrOfType<IntegerAttr>(emit::kCostInstanceAttr))
      return n.getInt();
    return std::nullopt;
  };
  func.walk([&](Operation *op) {
    if (std::optional<int64_t> n = numberOf(op))
      next = std::max(next, *n + 1);
  });
  func.walk([&](Operation *op) {
    if (phaseOf(op) != "forward" || !op->hasAttr(emit::kCostSignatureAttr))
      return;
    std::optional<int64_t> n = numberOf(op);
    instance[op] = n ? *n : next++;
    if (!forwardAt.try_emplace(op->getLoc(), op).second)
      ambiguous.insert(op->getLoc());
  });
  Builder b(func.getContext());
  for (auto [op, n] : instance)
    op->setAttr(emit::kCostInstanceAttr, b.getI64IntegerAttr(n));
  func.walk([&](Operation *op) {
    StringRef phase = phaseOf(op);
    if ((phase != "backward_input" && phase != "backward_weight") ||
        namedBefore.contains(op))
      return;
    // dist-autodiff writes `fused<"gradient">[forward location]`.
    Location at = op->getLoc();
    if (auto fused = dyn_cast<FusedLoc>(at)) {
      auto tag = dyn_cast_or_null<StringAttr>(fused.getMetadata());
      if (tag && tag.getValue() == "gradient" &&
          fused.getLocations().size() == 1)
        at = fused.getLocations().front();
    }
    auto it = forwardAt.find(at);
    if (it == forwardAt.end() || ambiguous.contains(at))
      return;
    op->setAttr(emit::kCostSignatureAttr,
                it->second->getAttr(emit::kCostSignatureAttr));
    op->setAttr(emit::kCostInstanceAttr,
                b.getI64IntegerAttr(instance[it->second]));
  });
}

void distopt::planning::annotateCostSignatures(ModuleOp module) {
  module.walk([&](func::FuncOp func) {
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    // A function the cost model cannot price (no sample dimension, such as
    // an optimizer step) simply gets no signatures. An op named before (the
    // whole op, before tensor parallelism split it) keeps its name.
    llvm::DenseSet<Operation *> namedBefore;
    func.walk([&](Operation *op) {
      if (op->hasAttr(emit::kCostSignatureAttr))
        namedBefore.insert(op);
    });
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    llvm::DenseMap<Operation *, std::string> signatures;
    LayerAnalysisOptions options;
    options.signatures = &signatures;
    if (succeeded(analyzeLayers(func, options))) {
      Builder b(func.getContext());
      for (auto &[op, sig] : signatures)
        if (!op->hasAttr(emit::kCostSignatureAttr))
          op->setAttr(emit::kCostSignatureAttr, b.getStringAttr(sig));
    }
    fileBackwardUnderForward(func, namedBefore);
  });
}
