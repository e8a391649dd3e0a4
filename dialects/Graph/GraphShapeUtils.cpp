//===- GraphShapeUtils.cpp - Shape math of the graph dialect ----*- C++ -*-===//
//
// Part of DistOpt. Implements the shape rules declared in GraphShapeUtils.h.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace distopt {
namespace graph {

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (ShapedType::isDynamic(da)) {
      out[i] = db;
    } else if (ShapedType::isDynamic(db) || da == db) {
      out[i] = da;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

bool dimsCompatible(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

bool shapesCompatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!dimsCompatible(x, y))
      return false;
  return true;
}

std::string shapeToString(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      },
      "x");
  return s;
}

std::optional<SmallVector<int64_t>>
inferMatmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                 bool transposeLhs, bool transposeRhs, std::string &error) {
  if (lhs.empty() || rhs.empty()) {
    error = "operands must have rank >= 1";
    return std::nullopt;
  }
  if ((transposeLhs && lhs.size() < 2) || (transposeRhs && rhs.size() < 2)) {
    error = "a transposed operand must have rank >= 2";
    return std::nullopt;
  }
  SmallVector<int64_t> l(lhs), r(rhs);
  bool lhsVector = l.size() == 1, rhsVector = r.size() == 1;
  if (lhsVector)
    l.insert(l.begin(), 1);
  if (rhsVector)
    r.push_back(1);
  size_t ln = l.size(), rn = r.size();
  if (transposeLhs)
    std::swap(l[ln - 1], l[ln - 2]);
  if (transposeRhs)
    std::swap(r[rn - 1], r[rn - 2]);
  if (!dimsCompatible(l[ln - 1], r[rn - 2])) {
    error = "contraction dimensions differ: lhs has " +
            std::to_string(l[ln - 1]) + ", rhs has " +
            std::to_string(r[rn - 2]);
    return std::nullopt;
  }
  auto batch = broadcastShapes(ArrayRef<int64_t>(l).drop_back(2),
                               ArrayRef<int64_t>(r).drop_back(2));
  if (!batch) {
    error = "batch dimensions " +
            shapeToString(ArrayRef<int64_t>(l).drop_back(2)) + " and " +
            shapeToString(ArrayRef<int64_t>(r).drop_back(2)) +
            " do not broadcast";
    return std::nullopt;
  }
  SmallVector<int64_t> out = *batch;
  if (!lhsVector)
    out.push_back(l[ln - 2]);
  if (!rhsVector)
    out.push_back(r[rn - 1]);
  return out;
}

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX: with ceil_mode the last window must start inside the padded input.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

LogicalResult verifyResultShape(Operation *op, ArrayRef<int64_t> expected,
                                ArrayRef<int64_t> actual) {
  if (shapesCompatible(expected, actual))
    return success();
  return op->emitOpError("result shape ")
         << shapeToString(actual) << " does not match expected "
         << shapeToString(expected);
}

} // namespace graph
} // namespace distopt
