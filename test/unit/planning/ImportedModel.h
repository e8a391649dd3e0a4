//===- ImportedModel.h - Generated models through the adapter ---*- C++ -*-===//
//
// Part of DistOpt. The product path's costs of a dist-modelgen model for
// the tests that compare them with the analytic builders: generate, import
// (graph-only weights) and run the layer analysis in bf16.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TEST_UNIT_PLANNING_IMPORTEDMODEL_H
#define DIST_TEST_UNIT_PLANNING_IMPORTEDMODEL_H

#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "lib/ModelGen/ModelGen.h"
#include "lib/Sim/Simulator.h"
#include "passes/Planning/LayerAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace distopt::unit {

/// An MLIR context with every dialect, and the last module imported.
class ImportedModel : public ::testing::Test {
public:
  ImportedModel() {
    registerAllDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }

  /// The graph of \p o (batch pinned to 1; \p edit may change the ONNX
  /// first) costed in bf16, with \p fused attention kernels.
  cost::ModelDesc
  imported(modelgen::ModelOptions o, bool fused,
           llvm::function_ref<void(onnx::ModelProto &)> edit = {}) {
    o.microBatch = 1;
    llvm::Expected<modelgen::GeneratedModel> gen = modelgen::generateModel(o);
    EXPECT_TRUE(static_cast<bool>(gen)) << llvm::toString(gen.takeError());
    if (edit)
      edit(gen->model);
    std::string bytes = gen->model.SerializeAsString();
    ONNXImportOptions io;
    io.weights = WeightPolicy::Ignore;
    module = importONNXBuffer(bytes, o.family, "", ctx.get(), io);
    EXPECT_TRUE(module);
    auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
    planning::LayerAnalysisOptions go;
    go.computeType = cluster::DType::BF16;
    go.fusedAttention = fused;
    mlir::FailureOr<cost::ModelDesc> m = planning::analyzeLayers(main, go);
    EXPECT_TRUE(mlir::succeeded(m));
    return *m;
  }

protected:
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// The imported graph's simulation \p g agrees with the analytic model's
/// \p a within 2% in iteration time and every list's peak memory.
inline void expectWithin2Percent(const sim::SimResult &g,
                                 const sim::SimResult &a) {
  double gt = g.iterationTime, at = a.iterationTime;
  EXPECT_NEAR(gt, at, 0.02 * at) << "graph " << gt << " s, analytic " << at;
  ASSERT_EQ(g.peakMemoryBytes.size(), a.peakMemoryBytes.size());
  for (unsigned s = 0; s < g.peakMemoryBytes.size(); ++s) {
    double gm = g.peakMemoryBytes[s], am = a.peakMemoryBytes[s];
    EXPECT_NEAR(gm, am, 0.02 * am)
        << "list " << s << ": graph " << gm << " B, analytic " << am;
  }
}

} // namespace distopt::unit

#endif // DIST_TEST_UNIT_PLANNING_IMPORTEDMODEL_H
