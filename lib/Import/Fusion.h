//===- Fusion.h - Recognise exporter patterns -------------------*- C++ -*-===//
//
// Part of DistOpt. Exporters at opset < 17 spell LayerNorm, RMSNorm, GELU
// and SiLU as chains of elementwise ops; these patterns fold the chains back
// into `graph.layer_norm`, `graph.rms_norm` and `graph.unary
// gelu/gelu_tanh/silu`.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_FUSION_H
#define DIST_LIB_IMPORT_FUSION_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace distopt {
namespace import {

/// Rewrites the LayerNorm, RMSNorm and GELU chains under `root` and removes
/// the ops they leave dead.
mlir::LogicalResult fuseExporterPatterns(mlir::Operation *root);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_FUSION_H
