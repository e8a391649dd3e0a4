//===- GraphShapeUtils.h - Shape math of the graph dialect ------*- C++ -*-===//
//
// Part of DistOpt. Shape rules shared by the graph-dialect verifiers and the
// ONNX importer: numpy broadcasting, axis normalization, matmul, convolution
// and pooling output sizes. Dynamic dimensions are ShapedType::kDynamic and
// are compatible with anything.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIALECTS_GRAPH_GRAPHSHAPEUTILS_H
#define DIST_DIALECTS_GRAPH_GRAPHSHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace distopt {
namespace graph {

/// The numpy broadcast of `a` and `b`, or nullopt when a pair of static
/// dimensions differ and neither is 1.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// `axis` in [-rank, rank) mapped to [0, rank); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// True when two dimensions can be equal (equal, or one is dynamic).
bool dimsCompatible(int64_t a, int64_t b);

/// True when both shapes have the same rank and compatible dimensions.
bool shapesCompatible(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Prints a shape as "2x?x768" ("scalar" for rank 0).
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

/// Result shape of numpy matmul with optional transposes of the last two
/// dimensions. On failure returns nullopt and sets `error`.
std::optional<llvm::SmallVector<int64_t>>
inferMatmulShape(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
                 bool transposeLhs, bool transposeRhs, std::string &error);

/// The number of elements of `shape`; nullopt when a dimension is dynamic
/// or negative, or the product does not fit in int64_t.
std::optional<int64_t> numElements(llvm::ArrayRef<int64_t> shape);

/// Bytes per element of `type` (or of the element type of a shaped type):
/// integers and floats by width rounded up to bytes (i1: 1), complex twice
/// its part, index 8, any other type 8.
int64_t elementBytes(mlir::Type type);

/// The bytes of a tensor of `type` (booleans take a byte, index 8 bytes);
/// nullopt when unranked, dynamic, or larger than int64_t counts.
std::optional<int64_t> tensorBytes(mlir::ShapedType type);

/// Elements of ONNX Range(start, limit, delta): max(ceil((limit - start) /
/// delta), 0). Nullopt when delta is 0, a value is not finite, or the count
/// does not fit in int64_t.
std::optional<int64_t> rangeCount(int64_t start, int64_t limit, int64_t delta);
std::optional<int64_t> rangeCount(double start, double limit, double delta);

/// Output size of a window along one dimension:
/// floor_or_ceil((in + padBegin + padEnd - dilation*(kernel-1) - 1) / stride)
/// + 1. Dynamic when `in` is dynamic. Computed without overflow; -1 (which
/// no static dimension matches) when an argument is out of range (stride,
/// dilation or kernel below 1, negative padding) or the size does not fit in
/// int64_t: verifiers check the attributes first (verifyWindowAttrs).
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);

/// Checks the window attributes of a convolution or pooling op (forward or
/// gradient) over `spatial` dimensions: `spatial` strides and dilations and
/// 2 x `spatial` pads (and kernel entries when `kernel` is given), every
/// stride, dilation and kernel entry >= 1 and every pad >= 0. `counts`
/// words the count error for the op family.
mlir::LogicalResult
verifyWindowAttrs(mlir::Operation *op, int64_t spatial,
                  std::optional<llvm::ArrayRef<int64_t>> kernel,
                  llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                  llvm::ArrayRef<int64_t> dilations, llvm::StringRef counts);

/// Emits "indices must be i32 or i64" on `op` unless `indices` has one of
/// those element types (gathers, lookups and their scatter gradients).
mlir::LogicalResult verifyIndexType(mlir::Operation *op,
                                    mlir::RankedTensorType indices);

/// Emits "<what> shape A does not match expected B" on `op` unless the
/// shapes are compatible.
mlir::LogicalResult verifyResultShape(mlir::Operation *op,
                                      llvm::ArrayRef<int64_t> expected,
                                      llvm::ArrayRef<int64_t> actual);

} // namespace graph
} // namespace distopt

#endif // DIST_DIALECTS_GRAPH_GRAPHSHAPEUTILS_H
