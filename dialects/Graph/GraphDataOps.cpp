//===- GraphDataOps.cpp - Data movement ops of the graph dialect ----------===//
//
// Part of DistOpt. Verifiers of reshape, flatten, transpose, split, slice,
// concat, expand, pad, trilu, cumsum, top_k, gather, embedding and iota.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace distopt::graph;

static LogicalResult verifySameElementType(Operation *op, Type input,
                                           Type result) {
  if (input == result)
    return success();
  return op->emitOpError("result element type ")
         << result << " differs from the operand's " << input;
}

/// Normalizes `axis` for `rank` or reports it as out of range.
static FailureOr<int64_t> checkedAxis(Operation *op, StringRef name,
                                      int64_t axis, int64_t rank) {
  if (auto a = normalizeAxis(axis, rank))
    return *a;
  return op->emitOpError("'")
         << name << "' " << axis << " is out of range for rank " << rank;
}

/// gather_elements and scatter_elements: along every dimension but `axis`,
/// the indices (of the data's rank) are at most the data's extent.
static LogicalResult verifyIndicesWithinData(Operation *op,
                                             RankedTensorType indices,
                                             RankedTensorType data,
                                             int64_t axis) {
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && !indices.isDynamicDim(d) && !data.isDynamicDim(d) &&
        indices.getDimSize(d) > data.getDimSize(d))
      return op->emitOpError("indices dimension ")
             << d << " (" << indices.getDimSize(d)
             << ") is larger than the data's (" << data.getDimSize(d) << ")";
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError("element count changes from ")
           << in.getNumElements() << " to " << out.getNumElements();
  return success();
}

LogicalResult FlattenOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  int64_t rank = in.getRank();
  // Flatten allows axis == rank (everything goes to the first dimension).
  // I64Attr getters return uint64_t: read the signed value.
  int64_t given = static_cast<int64_t>(getAxis());
  int64_t axis = given < 0 ? given + rank : given;
  if (axis < 0 || axis > rank)
    return emitOpError("'axis' ")
           << given << " is out of range for rank " << rank;
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  auto product = [](ArrayRef<int64_t> dims) -> std::optional<int64_t> {
    if (llvm::any_of(dims, ShapedType::isDynamic))
      return ShapedType::kDynamic;
    return numElements(dims);
  };
  std::optional<int64_t> outer = product(in.getShape().take_front(axis)),
                         inner = product(in.getShape().drop_front(axis));
  if (!outer || !inner)
    return emitOpError("flattened size of ")
           << shapeToString(in.getShape()) << " does not fit in int64";
  SmallVector<int64_t> expected = {*outer, *inner};
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult TransposeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  ArrayRef<int64_t> perm = getPerm();
  if ((int64_t)perm.size() != in.getRank())
    return emitOpError("'perm' has ")
           << perm.size() << " entries but the operand has rank "
           << in.getRank();
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError("'perm' is not a permutation of [0, ")
             << in.getRank() << ")";
    seen[p] = true;
    expected.push_back(in.getDimSize(p));
  }
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult SplitOp::verify() {
  auto in = getInput().getType();
  auto axis = checkedAxis(*this, "axis", getAxis(), in.getRank());
  if (failed(axis))
    return failure();
  if (getResults().empty())
    return emitOpError("needs at least one result");
  int64_t total = 0;
  bool dynamic = false;
  for (Value r : getResults()) {
    auto rt = cast<RankedTensorType>(r.getType());
    if (rt.getRank() != in.getRank())
      return emitOpError("every result must have the operand's rank ")
             << in.getRank();
    if (failed(verifySameElementType(*this, in.getElementType(),
                                     rt.getElementType())))
      return failure();
    for (int64_t i = 0; i < in.getRank(); ++i)
      if (i != *axis && !dimsCompatible(in.getDimSize(i), rt.getDimSize(i)))
        return emitOpError("result shape ")
               << shapeToString(rt.getShape())
               << " differs from the operand outside the split axis";
    if (rt.isDynamicDim(*axis)) {
      dynamic = true;
    } else {
      std::optional<int64_t> sum =
          llvm::checkedAdd(total, rt.getDimSize(*axis));
      if (!sum)
        return emitOpError("result sizes along axis ")
               << *axis << " overflow int64";
      total = *sum;
    }
  }
  if (!dynamic && !in.isDynamicDim(*axis) && total != in.getDimSize(*axis))
    return emitOpError("result sizes along axis ")
           << *axis << " add up to " << total << ", not "
           << in.getDimSize(*axis);
  return success();
}

LogicalResult SliceOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  ArrayRef<int64_t> starts = getStarts(), ends = getEnds(), axes = getAxes(),
                    steps = getSteps();
  if (starts.size() != ends.size() || starts.size() != axes.size() ||
      starts.size() != steps.size())
    return emitOpError("'starts', 'ends', 'axes' and 'steps' must have the "
                       "same length");
  SmallVector<int64_t> expected(in.getShape());
  SmallVector<bool> seen(in.getRank(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = checkedAxis(*this, "axes", axes[i], in.getRank());
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return emitOpError("axis ") << *axis << " is listed twice";
    seen[*axis] = true;
    if (steps[i] == 0)
      return emitOpError("'steps' must not contain 0");
    int64_t dim = in.getDimSize(*axis);
    if (ShapedType::isDynamic(dim)) {
      expected[*axis] = ShapedType::kDynamic;
      continue;
    }
    // ONNX clamping: starts/ends to [0, dim] for positive steps and to
    // [-1, dim-1] for negative ones, after adding dim to negatives.
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v += dim;
      return std::min(std::max(v, lo), hi);
    };
    // Steps may be any int64 (INT64_MIN included): count in 128 bits.
    using Wide = __int128;
    int64_t s, e;
    Wide step = steps[i];
    if (steps[i] > 0) {
      s = clamp(starts[i], 0, dim);
      e = clamp(ends[i], 0, dim);
      expected[*axis] = e > s ? int64_t((Wide(e) - s + step - 1) / step) : 0;
    } else {
      s = clamp(starts[i], -1, dim - 1);
      e = clamp(ends[i], -1, dim - 1);
      expected[*axis] = s > e ? int64_t((Wide(s) - e - step - 1) / -step) : 0;
    }
  }
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto out = getResult().getType();
  auto axis = checkedAxis(*this, "axis", getAxis(), out.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> expected;
  for (Value v : getInputs()) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != out.getRank())
      return emitOpError("every input must have rank ") << out.getRank();
    if (failed(verifySameElementType(*this, t.getElementType(),
                                     out.getElementType())))
      return failure();
    if (expected.empty()) {
      expected.assign(t.getShape().begin(), t.getShape().end());
      continue;
    }
    for (int64_t i = 0; i < t.getRank(); ++i) {
      if (i == *axis) {
        expected[i] = ShapedType::isDynamic(expected[i]) || t.isDynamicDim(i)
                          ? ShapedType::kDynamic
                          : expected[i] + t.getDimSize(i);
      } else if (!dimsCompatible(expected[i], t.getDimSize(i))) {
        return emitOpError("inputs differ in dimension ")
               << i << ", which is not the concatenation axis";
      }
    }
  }
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult ExpandOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  auto shape = broadcastShapes(in.getShape(), out.getShape());
  if (!shape || !shapesCompatible(*shape, out.getShape()))
    return emitOpError("operand shape ")
           << shapeToString(in.getShape()) << " does not broadcast to "
           << shapeToString(out.getShape());
  return success();
}

LogicalResult PadOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  ArrayRef<int64_t> pads = getPads();
  if ((int64_t)pads.size() != 2 * in.getRank())
    return emitOpError("'pads' needs ")
           << 2 * in.getRank() << " entries (begins then ends), got "
           << pads.size();
  SmallVector<int64_t> expected(in.getShape());
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (in.isDynamicDim(i))
      continue;
    std::optional<int64_t> padded = llvm::checkedAdd(expected[i], pads[i]);
    if (padded)
      padded = llvm::checkedAdd(*padded, pads[i + in.getRank()]);
    if (!padded)
      return emitOpError("'pads' make dimension ")
             << i << " overflow int64 (" << pads[i] << " and "
             << pads[i + in.getRank()] << " around " << expected[i] << ")";
    expected[i] = *padded;
    if (expected[i] < 0)
      return emitOpError("'pads' crop dimension ") << i << " below zero";
  }
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult TriluOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() < 2)
    return emitOpError("operand must have rank >= 2, got ") << in.getRank();
  if (Value d = getDiagonal()) {
    auto t = cast<RankedTensorType>(d.getType());
    if (!t.getElementType().isSignlessInteger() || !t.hasStaticShape() ||
        t.getNumElements() != 1)
      return emitOpError("diagonal must be one integer, got ") << t;
  }
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, in.getShape(), out.getShape());
}

LogicalResult CumSumOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() < 1)
    return emitOpError("operand must have rank >= 1, got a scalar");
  if (failed(checkedAxis(*this, "axis", getAxis(), in.getRank())))
    return failure();
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, in.getShape(), out.getShape());
}

LogicalResult TopKOp::verify() {
  auto in = getInput().getType();
  auto values = getValues().getType(), indices = getIndices().getType();
  if (in.getRank() < 1)
    return emitOpError("operand must have rank >= 1, got a scalar");
  auto axis = checkedAxis(*this, "axis", getAxis(), in.getRank());
  if (failed(axis))
    return failure();
  int64_t dim = in.getDimSize(*axis), k = getK();
  if (k < 0 || (!ShapedType::isDynamic(dim) && k > dim))
    return emitOpError("k ") << k << " must be in [0, " << dim
                             << "] (the operand's dimension " << *axis << ")";
  if (failed(verifySameElementType(*this, in.getElementType(),
                                   values.getElementType())))
    return failure();
  if (!indices.getElementType().isInteger(64))
    return emitOpError("indices must be i64, got ") << indices.getElementType();
  SmallVector<int64_t> expected(in.getShape());
  expected[*axis] = k;
  if (failed(verifyResultShape(*this, expected, values.getShape())))
    return failure();
  return verifyResultShape(*this, expected, indices.getShape());
}

LogicalResult GatherOp::verify() {
  auto data = getData().getType(), indices = getIndices().getType(),
       out = getResult().getType();
  if (failed(verifyIndexType(*this, indices)))
    return failure();
  auto axis = checkedAxis(*this, "axis", getAxis(), data.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> expected(data.getShape().take_front(*axis));
  llvm::append_range(expected, indices.getShape());
  llvm::append_range(expected, data.getShape().drop_front(*axis + 1));
  if (failed(verifySameElementType(*this, data.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult GatherElementsOp::verify() {
  auto data = getData().getType(), indices = getIndices().getType(),
       out = getResult().getType();
  if (failed(verifyIndexType(*this, indices)))
    return failure();
  if (indices.getRank() != data.getRank())
    return emitOpError("indices must have the data's rank ")
           << data.getRank() << ", got " << indices.getRank();
  auto axis = checkedAxis(*this, "axis", getAxis(), data.getRank());
  if (failed(axis))
    return failure();
  if (failed(verifyIndicesWithinData(*this, indices, data, *axis)))
    return failure();
  if (failed(verifySameElementType(*this, data.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, indices.getShape(), out.getShape());
}

LogicalResult GatherNDOp::verify() {
  auto data = getData().getType(), indices = getIndices().getType(),
       out = getResult().getType();
  if (failed(verifyIndexType(*this, indices)))
    return failure();
  if (data.getRank() < 1 || indices.getRank() < 1)
    return emitOpError("data and indices must have rank >= 1, got ")
           << data.getRank() << " and " << indices.getRank();
  int64_t b = static_cast<int64_t>(getBatchDims());
  if (b < 0 || b >= std::min(data.getRank(), indices.getRank()))
    return emitOpError("batch_dims ")
           << b << " must be in [0, "
           << std::min(data.getRank(), indices.getRank())
           << ") (less than the rank of data and of indices)";
  int64_t k = indices.getShape().back();
  if (ShapedType::isDynamic(k) || k < 1 || b + k > data.getRank())
    return emitOpError("the last dimension of indices (")
           << k << ") must be in [1, " << data.getRank() - b
           << "]: each index tuple addresses that many data dimensions after "
              "the batch_dims";
  for (int64_t d = 0; d < b; ++d)
    if (indices.getDimSize(d) != data.getDimSize(d))
      return emitOpError("batch dimension ")
             << d << " of indices (" << indices.getDimSize(d)
             << ") differs from the data's (" << data.getDimSize(d) << ")";
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(b + k));
  if (failed(verifySameElementType(*this, data.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, expected, out.getShape());
}

/// What every scatter checks last: updates of the data's element type, a
/// result of the data's type.
static LogicalResult verifyScatterResult(Operation *op, RankedTensorType data,
                                         RankedTensorType updates,
                                         RankedTensorType out) {
  if (updates.getElementType() != data.getElementType())
    return op->emitOpError("updates element type ")
           << updates.getElementType() << " differs from the data's "
           << data.getElementType();
  if (failed(verifySameElementType(op, data.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(op, data.getShape(), out.getShape());
}

LogicalResult ScatterElementsOp::verify() {
  auto data = getData().getType(), indices = getIndices().getType(),
       updates = getUpdates().getType(), out = getResult().getType();
  if (failed(verifyIndexType(*this, indices)))
    return failure();
  if (data.getRank() < 1 || indices.getRank() != data.getRank())
    return emitOpError("indices must have the data's rank (at least 1), got ")
           << indices.getRank() << " and " << data.getRank();
  if (updates.getShape() != indices.getShape())
    return emitOpError("updates must have the indices' shape ")
           << shapeToString(indices.getShape()) << ", got "
           << shapeToString(updates.getShape());
  auto axis = checkedAxis(*this, "axis", getAxis(), data.getRank());
  if (failed(axis))
    return failure();
  if (failed(verifyIndicesWithinData(*this, indices, data, *axis)))
    return failure();
  return verifyScatterResult(*this, data, updates, out);
}

LogicalResult ScatterNDOp::verify() {
  auto data = getData().getType(), indices = getIndices().getType(),
       updates = getUpdates().getType(), out = getResult().getType();
  if (failed(verifyIndexType(*this, indices)))
    return failure();
  if (data.getRank() < 1 || indices.getRank() < 1)
    return emitOpError("data and indices must have rank >= 1, got ")
           << data.getRank() << " and " << indices.getRank();
  int64_t k = indices.getShape().back();
  if (ShapedType::isDynamic(k) || k < 1 || k > data.getRank())
    return emitOpError("the last dimension of indices (")
           << k << ") must be in [1, " << data.getRank()
           << "]: each index tuple addresses that many data dimensions";
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(k));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("updates must have shape ")
           << shapeToString(expected)
           << " (the indices' shape without its last dimension, then the "
              "data's dimensions after the indexed ones), got "
           << shapeToString(updates.getShape());
  return verifyScatterResult(*this, data, updates, out);
}

LogicalResult EmbeddingOp::verify() {
  auto table = getTable().getType(), indices = getIndices().getType(),
       out = getResult().getType();
  if (table.getRank() != 2)
    return emitOpError("table must be 2-D, got rank ") << table.getRank();
  if (failed(verifyIndexType(*this, indices)))
    return failure();
  SmallVector<int64_t> expected(indices.getShape());
  expected.push_back(table.getDimSize(1));
  if (failed(verifySameElementType(*this, table.getElementType(),
                                   out.getElementType())))
    return failure();
  return verifyResultShape(*this, expected, out.getShape());
}

/// Checks that `attr` (named `name`) is an integer attribute for an integer
/// element type and a float attribute for a float one.
static LogicalResult verifyIotaAttr(Operation *op, StringRef name,
                                    Attribute attr, Type elementType) {
  bool isInt = isa<IntegerType>(elementType);
  if (isInt ? isa<IntegerAttr>(attr) : isa<FloatAttr>(attr))
    return success();
  return op->emitOpError("'")
         << name << "' must be " << (isInt ? "an integer" : "a float")
         << " attribute for result element type " << elementType << ", got "
         << attr;
}

LogicalResult IotaOp::verify() {
  auto out = getResult().getType();
  if (out.getRank() != 1 || !out.hasStaticShape())
    return emitOpError("result must be a static 1-D tensor, got ") << out;
  Type et = out.getElementType();
  if (!isa<IntegerType, FloatType>(et))
    return emitOpError("result element type must be integer or float, got ")
           << et;
  if (failed(verifyIotaAttr(*this, "start", getStart(), et)) ||
      failed(verifyIotaAttr(*this, "delta", getDelta(), et)))
    return failure();
  bool zero = isa<IntegerAttr>(getDelta())
                  ? cast<IntegerAttr>(getDelta()).getValue().isZero()
                  : cast<FloatAttr>(getDelta()).getValue().isZero();
  if (zero)
    return emitOpError("'delta' must be nonzero");
  return success();
}
