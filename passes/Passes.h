//===- Passes.h - DistOpt passes --------------------------------*- C++ -*-===//
//
// Part of DistOpt. Declarations of every pass, generated from the groups'
// passes/<Group>/Passes.td.
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

// The passes of each group (passes/<Group>/Passes.td).
#define GEN_PASS_DECL
#include "passes/Import/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/Import/Passes.h.inc"
#define GEN_PASS_DECL
#include "passes/Autodiff/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/Autodiff/Passes.h.inc"
#define GEN_PASS_DECL
#include "passes/Planning/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/Planning/Passes.h.inc"
#define GEN_PASS_DECL
#include "passes/Distribute/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/Distribute/Passes.h.inc"
#define GEN_PASS_DECL
#include "passes/Emission/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/Emission/Passes.h.inc"
#define GEN_PASS_DECL
#include "passes/Partition/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/Partition/Passes.h.inc"

/// Registers every DistOpt pass.
inline void registerDistPasses() {
  registerImportPasses();
  registerAutodiffPasses();
  registerPlanningPasses();
  registerDistributePasses();
  registerEmissionPasses();
  registerPartitionPasses();
}

} // namespace distopt

#endif // DIST_PASSES_PASSES_H
