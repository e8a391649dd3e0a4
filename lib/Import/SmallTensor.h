//===- SmallTensor.h - Small constant tensors of the importer ---*- C++ -*-===//
//
// Part of DistOpt. The importer folds shape computations (Shape, Gather,
// Concat, ...) on small tensors; SmallTensor holds such a value, and
// foldConstants rewrites foldable ONNX nodes into Constant nodes so that
// a second run of ONNX shape inference sees static shapes.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_SMALLTENSOR_H
#define DIST_LIB_IMPORT_SMALLTENSOR_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <optional>

namespace onnx {
class GraphProto;
class TensorProto;
class TypeProto;
} // namespace onnx

namespace distopt {
namespace import {

/// Constants of at most this many elements are inlined (`graph.constant`)
/// and folded; larger ones are weights.
constexpr int64_t kMaxInlineElements = 64;

/// A small tensor of integers, booleans or floating-point numbers.
struct SmallTensor {
  /// onnx::TensorProto::DataType.
  int32_t dtype = 0;
  llvm::SmallVector<int64_t> shape;
  /// Values of integer and bool tensors.
  llvm::SmallVector<int64_t> ints;
  /// Values of floating-point tensors.
  llvm::SmallVector<double> floats;

  bool isFloat() const;
  int64_t numElements() const;
  /// Element `i` as double / as int64, whatever the storage.
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
};

/// True for the data types SmallTensor can hold.
bool isFoldableType(int32_t dtype);

/// `v` truncated toward zero, NaN as 0 and out-of-range values clamped
/// (ONNX leaves such casts undefined; C++ conversion would be UB).
int64_t toInt64(double v);

/// Reads `tensor` when it holds at most `maxElements` elements of a
/// foldable type with its data inline; nullopt otherwise.
std::optional<SmallTensor>
readSmallTensor(const onnx::TensorProto &tensor,
                int64_t maxElements = kMaxInlineElements);

/// Writes `value` into `tensor` (dims, data type and typed data).
void writeSmallTensor(const SmallTensor &value, onnx::TensorProto &tensor);

/// Static shapes of values, by name, as known after shape inference.
using ShapeMap = llvm::StringMap<llvm::SmallVector<int64_t>>;

/// The declared or inferred type of every value that has one (graph inputs,
/// value_info, graph outputs; later entries win), by name.
using TypeMap = llvm::StringMap<const onnx::TypeProto *>;
TypeMap collectValueTypes(const onnx::GraphProto &graph);

/// Collects the static shapes in `graph` (inputs, value_info, outputs,
/// initializers).
ShapeMap collectStaticShapes(const onnx::GraphProto &graph);

/// Replaces every node whose result is a small constant computable from
/// constants and static shapes by a Constant node. Returns how many nodes
/// were replaced.
unsigned foldConstants(onnx::GraphProto &graph, int64_t opset);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_SMALLTENSOR_H
