//===- ImportONNX.h - ONNX to graph-dialect importer ------------*- C++ -*-===//
//
// Part of DistOpt. Public API of the ONNX importer: ONNX protobuf in, a
// `builtin.module` holding one `func.func` of graph-dialect ops out. Errors
// and remarks are reported as MLIR diagnostics on the given context.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_IMPORTONNX_H
#define DIST_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace distopt {

/// What the importer does with weight data (initializers, external data).
enum class WeightPolicy {
  /// Reference every weight by file and byte offset; check that the bytes
  /// exist (external files present and long enough). Nothing is copied.
  Reference,
  /// Keep shapes and element types only; read and check nothing. For
  /// graph-only models and models whose weight files are absent.
  Ignore,
};

struct ONNXImportOptions {
  /// Shapes pinned by graph input name ("--input-shape=NAME:2x1024").
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Symbolic dimensions (ONNX `dim_param`) pinned by name in every graph
  /// input that uses them ("--input-dim=sequence=128"), as onnxruntime's
  /// free-dimension overrides by name. An `inputShapes` entry for an input
  /// must agree with them.
  llvm::StringMap<int64_t> inputDims;
  /// Scalar graph inputs fixed to a value ("--input-value=sr:16000"): the
  /// input becomes a constant, so what depends on it folds (an `If` on a
  /// sample rate keeps the branch it selects).
  llvm::StringMap<double> inputValues;
  /// Value given to a dynamic leading (batch) dimension that no
  /// `inputShapes` entry pins. The choice is reported as a remark.
  int64_t defaultBatch = 1;
  WeightPolicy weights = WeightPolicy::Reference;
  /// Name of the created function.
  std::string funcName = "main";
};

/// Parses "NAME:D0xD1x..." into `options.inputShapes`. On malformed input
/// returns false and sets `error` to a message saying what is wrong.
bool parseInputShapeSpec(llvm::StringRef spec, ONNXImportOptions &options,
                         std::string &error);

/// Parses "NAME=VALUE" or a comma list "NAME=VALUE,NAME=VALUE" (VALUE a
/// positive integer) into `options.inputDims`. On malformed input returns
/// false and sets `error`.
bool parseInputDimSpec(llvm::StringRef spec, ONNXImportOptions &options,
                       std::string &error);

/// Parses "NAME:VALUE" (a number) into `options.inputValues`. On malformed
/// input returns false and sets `error`.
bool parseInputValueSpec(llvm::StringRef spec, ONNXImportOptions &options,
                         std::string &error);

/// True when `bytes` (a file's first bytes) or `path`'s extension say the file
/// is an ONNX model rather than MLIR text.
bool looksLikeONNX(llvm::StringRef path, llvm::StringRef bytes);

/// Imports the ONNX model at `path`. External data is resolved relative to
/// the model's folder. Returns null after emitting an error diagnostic.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXFile(llvm::StringRef path, mlir::MLIRContext *context,
               const ONNXImportOptions &options = {});

/// Imports a serialized ONNX model held in memory. `bufferName` names it in
/// diagnostics; `baseDir` is where external data files are looked up.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXBuffer(llvm::StringRef bytes, llvm::StringRef bufferName,
                 llvm::StringRef baseDir, mlir::MLIRContext *context,
                 const ONNXImportOptions &options = {});

} // namespace distopt

#endif // DIST_IMPORTONNX_H
