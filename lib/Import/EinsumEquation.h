//===- EinsumEquation.h - ONNX Einsum equations -----------------*- C++ -*-===//
//
// Part of DistOpt. Parses an Einsum equation against its operands' ranks
// and sizes its labels: the importer's lowering (TranslateEinsum.cpp) and
// the shape inference ONNX 1.12 lacks (it gives Einsum's rank only;
// ShapeInference.cpp) share it.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_EINSUMEQUATION_H
#define DIST_LIB_IMPORT_EINSUMEQUATION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distopt {
namespace import {

/// An equation resolved against its operands' ranks. A label is a letter's
/// character code, or kEllipsis + k for dimension k of the broadcast
/// ellipsis (right-aligned across the operands).
struct EinsumEquation {
  static constexpr int kEllipsis = 1000;
  /// The label of each dimension of each operand, and of the output.
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  /// Dimensions of the broadcast ellipsis (the most any operand has).
  int64_t ellipsis = 0;
  /// Each label's size: an ellipsis dimension of size 1 broadcasts.
  std::map<int, int64_t> sizes;

  /// Parses `equation` (spaces ignored) for operands of shapes `shapes`;
  /// on failure `error` says what is wrong and what to do.
  bool parse(llvm::StringRef equation,
             llvm::ArrayRef<std::vector<int64_t>> shapes, std::string &error);
  /// The sizes of `labels`.
  std::vector<int64_t> shapeOf(llvm::ArrayRef<int> labels) const;
  /// A label as written ("i", or "..." for an ellipsis dimension).
  static std::string name(int label);
};

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_EINSUMEQUATION_H
