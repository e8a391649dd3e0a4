//===- Fusion.h - Exporters' spellings back to graph ops --------*- C++ -*-===//
//
// Part of DistOpt. Exporters at opset < 17 spell LayerNorm, RMSNorm, GELU
// and SiLU as chains of elementwise ops; fuseExporterPatterns folds the chains
// back into `graph.layer_norm`, `graph.rms_norm` and `graph.unary
// gelu/gelu_tanh/silu`. A library of its own (DistImportFusion: MLIR and the
// graph dialect only) so that the importer and the
// dist-fuse-exporter-patterns pass share it without lib/ linking passes/.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_FUSION_H
#define DIST_LIB_IMPORT_FUSION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

namespace distopt {
namespace import {

/// Rewrites the LayerNorm, RMSNorm, GELU and SiLU chains in `func`, then
/// erases every side-effect-free op left without uses (what the chains leave,
/// an exporter's unused constants, weights and shape leftovers). Fails, without
/// a diagnostic (the caller says where), when the rewrite does not converge.
mlir::LogicalResult fuseExporterPatterns(mlir::func::FuncOp func);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_FUSION_H
