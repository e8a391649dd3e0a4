//===- Passes.h - DistOpt passes --------------------------------*- C++ -*-===//
//
// Part of DistOpt. Declarations generated from Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PASSES_H
#define DIST_PASSES_PASSES_H

#include "dialects/Dist/DistDialect.h"
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Graph/GraphDialect.h"
#include "passes/PassOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace distopt {

/// What dist-prepare-for-emission prepares a module for.
enum class EmissionTarget { CPU, CUDA };

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace distopt

#endif // DIST_PASSES_PASSES_H
