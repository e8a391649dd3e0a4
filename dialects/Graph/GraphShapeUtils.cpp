//===- GraphShapeUtils.cpp - Shape math of the graph dialect ----*- C++ -*-===//
//
// Part of DistOpt. Implements the shape rules declared in GraphShapeUtils.h.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

std::optional<int64_t> numElements(ArrayRef<int64_t> shape) {
  // The product of the non-zero dimensions must fit too, so that every
  // partial product (strides, inner and outer sizes) of a tensor with a zero
  // dimension fits as well.
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0 || ShapedType::isDynamic(d))
      return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    std::optional<int64_t> next = llvm::checkedMul(n, d);
    if (!next)
      return std::nullopt;
    n = *next;
  }
  return empty ? 0 : n;
}

int64_t elementBytes(Type type) {
  Type elem = getElementTypeOrSelf(type);
  if (auto c = dyn_cast<ComplexType>(elem))
    return 2 * elementBytes(c.getElementType());
  if (elem.isIntOrFloat())
    return std::max<int64_t>(1, (elem.getIntOrFloatBitWidth() + 7) / 8);
  return 8;
}

std::optional<int64_t> tensorBytes(ShapedType type) {
  if (!type.hasRank())
    return std::nullopt;
  std::optional<int64_t> n = numElements(type.getShape());
  if (!n)
    return std::nullopt;
  return llvm::checkedMul(*n, elementBytes(type));
}

std::optional<int64_t> rangeCount(int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0)
    return std::nullopt;
  __int128 span = __int128(limit) - start, d = delta;
  __int128 n = d > 0 ? (span > 0 ? (span + d - 1) / d : 0)
                     : (span < 0 ? (span + d + 1) / d : 0);
  if (n > std::numeric_limits<int64_t>::max())
    return std::nullopt;
  return int64_t(n);
}

std::optional<int64_t> rangeCount(double start, double limit, double delta) {
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) ||
      !std::isfinite(delta))
    return std::nullopt;
  double n = std::ceil((limit - start) / delta);
  if (!(n < 9.2e18))
    return std::nullopt;
  return n > 0 ? int64_t(n) : 0;
}

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  if (in < 0 || kernel < 1 || stride < 1 || dilation < 1 || padBegin < 0 ||
      padEnd < 0)
    return -1;
  // Every operand is below 2^63, so the window arithmetic fits in 128 bits.
  using Wide = __int128;
  Wide span = Wide(in) + padBegin + padEnd - Wide(dilation) * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  Wide out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX: with ceil_mode the last window must start inside the padded input.
  if (ceilMode && (out - 1) * stride >= Wide(in) + padBegin)
    --out;
  return out > std::numeric_limits<int64_t>::max() ? -1 : int64_t(out);
}

LogicalResult verifyWindowAttrs(Operation *op, int64_t spatial,
                                std::optional<ArrayRef<int64_t>> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations, StringRef counts) {
  auto below = [](ArrayRef<int64_t> values, int64_t min) {
    return llvm::any_of(values, [&](int64_t v) { return v < min; });
  };
  if (kernel && (int64_t)kernel->size() != spatial)
    return op->emitOpError(counts);
  if (kernel && below(*kernel, 1))
    return op->emitOpError("'kernel' entries must be positive");
  if ((int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial)
    return op->emitOpError(counts);
  if (below(strides, 1) || below(dilations, 1))
    return op->emitOpError("strides and dilations must be positive");
  if (below(pads, 0))
    return op->emitOpError("pads must be non-negative");
  return success();
}

LogicalResult verifyResultShape(Operation *op, ArrayRef<int64_t> expected,
                                ArrayRef<int64_t> actual) {
  if (shapesCompatible(expected, actual))
    return success();
  return op->emitOpError("result shape ")
         << shapeToString(actual) << " does not match expected "
         << shapeToString(expected);
}

LogicalResult verifyIndexType(Operation *op, RankedTensorType indices) {
  Type t = indices.getElementType();
  if (t.isInteger(32) || t.isInteger(64))
    return success();
  return op->emitOpError("indices must be i32 or i64, got ") << t;
}

} // namespace graph
} // namespace distopt
