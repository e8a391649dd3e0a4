//===- AnnotateLayers.cpp - The dist-annotate-layers pass --------*- C++ -*-===//
//
// Part of DistOpt. Writes the cost-model layers (`dist.layer`) and the
// Megatron tensor-parallel roles (`dist.tp`) of the planned function onto
// its ops, so that later passes plan, outline and simulate the same layers.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

namespace distopt {
#define GEN_PASS_DEF_ANNOTATELAYERSPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

/// The --dist-print-model table.
static void printModel(const cost::ModelDesc &model, llvm::raw_ostream &os) {
  os << "model '" << model.name << "': " << model.layers.size()
     << " layers, " << llvm::formatv("{0:F3}", model.paramCount() / 1e9)
     << "B parameters, "
     << llvm::formatv("{0:F3}", model.trainingFlopsPerSample() / 1e12)
     << " TFLOP per sample (training, no recomputation)\n";
  for (const cost::LayerDesc &layer : model.layers) {
    cost::PhaseCost f = layer.total(cost::Phase::Forward);
    os << llvm::formatv("  {0,-60} ops {1,4}  params {2,12:F0}  fwd GFLOP "
                        "{3,10:F3}  boundary {4}\n",
                        layer.name.substr(0, 60), layer.ops.size(),
                        layer.params(), f.flops / 1e9,
                        humanBytes(layer.boundaryBytes));
  }
}

namespace {
struct AnnotateLayersPass
    : public distopt::impl::AnnotateLayersPassBase<AnnotateLayersPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> func =
        plannedFunction(module, funcName, "dist-annotate-layers");
    if (failed(func))
      return signalPassFailure();
    // The layers are found afresh: annotations from an earlier run are
    // replaced, not read.
    auto *dialect = getContext().getOrLoadDialect<dist::DistDialect>();
    auto layer = dialect->getLayerAttrHelper();
    auto tp = dialect->getTpAttrHelper();
    func->walk([&](Operation *op) {
      op->removeAttr(layer.getName());
      op->removeAttr(tp.getName());
    });
    PlannedOps ops;
    FailureOr<cost::ModelDesc> model = modelOf(*func, Costing{}, &ops);
    if (failed(model))
      return signalPassFailure();
    Builder b(&getContext());
    for (auto [l, layerOps] : llvm::enumerate(ops.layers))
      for (Operation *op : layerOps)
        layer.setAttr(op, b.getI64IntegerAttr(l));
    for (auto &[op, role] : ops.roles)
      tp.setAttr(op, dist::TensorParallelRoleAttr::get(&getContext(), role));
    if (print)
      printModel(*model, llvm::outs());
  }
};
} // namespace
