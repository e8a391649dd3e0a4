//===- InitAll.cpp - Register DistOpt dialects and passes ------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "dist/InitAll.h"
#include "dist/Pipelines.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void distopt::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<distopt::graph::GraphDialect, distopt::dist::DistDialect,
                  distopt::emit::EmitDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect>();
}

void distopt::registerAllPasses() {
  // The generic clean-ups (canonicalize, cse, symbol-dce, ...) are useful on
  // graph IR too; DistOpt's own passes register below as they are added.
  mlir::registerTransformsPasses();
  distopt::registerDistPasses();
  distopt::registerPipelines();
}
