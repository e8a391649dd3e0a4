//===- Weights.h - Initializers to weight references ------------*- C++ -*-===//
//
// Part of DistOpt. Turns ONNX initializers into `graph.weight` references
// (file, offset, size) or small `graph.constant`s, validating external data
// locations without reading a byte of weight data.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_WEIGHTS_H
#define DIST_LIB_IMPORT_WEIGHTS_H

#include "ModelScanner.h"
#include "Translator.h"

#include "dist/ImportONNX.h"

namespace distopt {
namespace import {

/// Where the importer finds model and weight files.
struct WeightSource {
  /// The model's bytes (the initializers' inline payloads live here).
  llvm::StringRef bytes;
  /// Name of the model file as written into `graph.weight` (its basename).
  std::string modelFile;
  /// Folder that external data locations are relative to.
  std::string baseDir;
  /// Payload positions found by the scanner, by initializer index.
  const ScannedModel *scan = nullptr;
  WeightPolicy policy = WeightPolicy::Reference;
};

/// Checks an external-data location: relative, no "..", inside baseDir.
/// Returns an error message, or "" when the location is acceptable.
std::string checkExternalLocation(llvm::StringRef location);

/// Defines every top-level initializer of `graph` in `t`: small ones as
/// constants, the rest as `graph.weight` ops. Restores the inline data of
/// small stripped initializers into `graph` first (for shape inference).
mlir::LogicalResult defineInitializers(Translator &t,
                                       const onnx::GraphProto &graph,
                                       const WeightSource &source,
                                       mlir::Location loc);

/// Puts back the payloads of stripped initializers with at most
/// kMaxInlineElements elements, so shape inference and folding see them.
void restoreSmallPayloads(onnx::GraphProto &graph, const WeightSource &source);

/// Checks that every tensor held in the model itself (initializers and
/// tensor attributes, subgraphs included) has as many bytes of raw_data, or
/// as many typed values, as its dims and data type need. ONNX's shape
/// inference copies a shape input's raw_data without that check, so a
/// short payload would corrupt memory. Run after restoreSmallPayloads.
llvm::Error checkInlinePayloads(const onnx::GraphProto &graph);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_WEIGHTS_H
