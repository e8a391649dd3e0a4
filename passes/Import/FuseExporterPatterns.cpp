//===- FuseExporterPatterns.cpp - Exporters' spellings to graph ops -------===//
//
// Part of DistOpt. The dist-fuse-exporter-patterns pass: the importer's
// exporter-pattern fusion (lib/Import/Fusion.cpp) on any function, so that
// graph IR from another compiler gets the same graph.layer_norm, rms_norm
// and gelu/silu ops an ONNX import gets.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "lib/Import/Fusion.h"

namespace distopt {
#define GEN_PASS_DEF_FUSEEXPORTERPATTERNSPASS
#include "passes/Import/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct FuseExporterPatternsPass
    : public distopt::impl::FuseExporterPatternsPassBase<
          FuseExporterPatternsPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (failed(import::fuseExporterPatterns(func))) {
      func.emitError("exporter-pattern fusion did not converge within the "
                     "greedy rewriter's iteration limit");
      signalPassFailure();
    }
  }
};
} // namespace
