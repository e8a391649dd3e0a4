//===- GraphDialect.cpp - The graph dialect ---------------------*- C++ -*-===//
//
// Part of DistOpt. Registers the graph dialect and implements the data ops
// (weight, constant, opaque) and matmul.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace distopt::graph;

#include "dialects/Graph/GraphDialect.cpp.inc"
#include "dialects/Graph/GraphEnums.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/GraphOps.cpp.inc"
      >();
  registerCostModels(getContext());
}

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.cpp.inc"

//===----------------------------------------------------------------------===//
// WeightOp
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getSymName().empty())
    return emitOpError("needs a non-empty name");
  bool hasOffset = getOffset().has_value(), hasSize = getSize().has_value();
  if (!getFile()) {
    if (hasOffset || hasSize)
      return emitOpError("has 'offset' or 'size' but no 'file'; add the file "
                         "that holds the bytes or drop both");
    return success();
  }
  if (getFile()->empty())
    return emitOpError("'file' must not be empty");
  if (!hasOffset || !hasSize)
    return emitOpError("with a 'file' needs both 'offset' and 'size'");
  int64_t offset = getOffsetAttr().getInt(), size = getSizeAttr().getInt();
  if (offset < 0 || size < 0)
    return emitOpError("'offset' and 'size' must be non-negative");
  auto type = getResult().getType();
  Type elem = type.getElementType();
  if (type.hasStaticShape() && elem.isIntOrFloat() &&
      elem.getIntOrFloatBitWidth() % 8 == 0) {
    std::optional<int64_t> count = numElements(type.getShape()), expected;
    if (count)
      expected =
          llvm::checkedMul(*count, int64_t(elem.getIntOrFloatBitWidth() / 8));
    if (!expected)
      return emitOpError("type ") << type << " has more bytes than int64 holds";
    // A ZeRO-3 block (`dist.zero_shard` {shape, group}) of a tensor of
    // `shape`, which the file holds whole.
    if (auto zero = (*this)->getAttrOfType<DictionaryAttr>("dist.zero_shard"))
      if (auto shape = zero.getAs<DenseI64ArrayAttr>("shape")) {
        std::optional<int64_t> whole = numElements(shape.asArrayRef());
        expected = whole ? llvm::checkedMul(
                               *whole, int64_t(elem.getIntOrFloatBitWidth() / 8))
                         : std::nullopt;
        if (!expected)
          return emitOpError("'dist.zero_shard' shape has more bytes than "
                             "int64 holds");
      }
    // A tensor-parallel shard (`dist.tp_shard` [dim, blocks, parts], or
    // [dim, blocks, parts, stride] per axis) is one of the product of the
    // axes' `parts` equal parts of the tensor the file holds (and a ZeRO-3
    // block's shape is such a part). The graph dialect does not depend on
    // the dist one, so the two forms are read here (dist::shardAxes).
    if (auto shard = (*this)->getAttrOfType<DenseI64ArrayAttr>("dist.tp_shard");
        expected && shard) {
      ArrayRef<int64_t> s = shard.asArrayRef();
      size_t step = s.size() == 3 ? 3 : 4;
      for (size_t i = 2; expected && s.size() % step == 0 && i < s.size();
           i += step)
        if (s[i] > 0)
          expected = llvm::checkedMul(*expected, s[i]);
    }
    bool part = (*this)->hasAttr("dist.tp_shard") ||
                (*this)->hasAttr("dist.zero_shard");
    if (expected && *expected != size)
      return emitOpError("'size' is ")
             << size << " bytes but " << type << " needs " << *expected
             << (part ? " (the file holds the whole tensor this is a part of)"
                      : "");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult
ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                             ValueRange, DictionaryAttr attributes,
                             OpaqueProperties properties, RegionRange,
                             SmallVectorImpl<Type> &inferredReturnTypes) {
  auto *props = properties.as<Properties *>();
  Attribute value = props ? props->value : Attribute();
  if (!value && attributes)
    value = attributes.get("value");
  auto elements = llvm::dyn_cast_if_present<ElementsAttr>(value);
  if (!elements || !llvm::isa<RankedTensorType>(elements.getType()))
    return emitOptionalError(location,
                             "'graph.constant' needs a ranked tensor value");
  inferredReturnTypes.push_back(elements.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// OpaqueOp
//===----------------------------------------------------------------------===//

LogicalResult OpaqueOp::verify() {
  if (getOpType().empty())
    return emitOpError("needs a non-empty ONNX 'op_type'");
  auto check = [&](std::optional<ArrayRef<int64_t>> indices, size_t count,
                   StringRef name) -> LogicalResult {
    if (!indices)
      return success();
    if (indices->size() != count)
      return emitOpError("'") << name << "' has " << indices->size()
                              << " entries for " << count << " values";
    for (size_t i = 0; i < indices->size(); ++i)
      if ((*indices)[i] < 0 || (i > 0 && (*indices)[i] <= (*indices)[i - 1]))
        return emitOpError("'")
               << name << "' must be increasing and non-negative";
    return success();
  };
  if (failed(check(getInputIndices(), getInputs().size(), "input_indices")))
    return failure();
  return check(getOutputIndices(), getOutputs().size(), "output_indices");
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhs = getLhs().getType(), rhs = getRhs().getType();
  auto result = getResult().getType();
  if (lhs.getElementType() != rhs.getElementType() ||
      lhs.getElementType() != result.getElementType())
    return emitOpError("operand and result element types must match, got ")
           << lhs.getElementType() << ", " << rhs.getElementType() << " -> "
           << result.getElementType();
  std::string error;
  auto expected = inferMatmulShape(lhs.getShape(), rhs.getShape(),
                                   getTransposeLhs(), getTransposeRhs(), error);
  if (!expected)
    return emitOpError(error);
  if (failed(verifyResultShape(*this, *expected, result.getShape())))
    return failure();
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    auto b = broadcastShapes(biasType.getShape(), result.getShape());
    if (!b || !shapesCompatible(*b, result.getShape()))
      return emitOpError("bias shape ")
             << shapeToString(biasType.getShape())
             << " does not broadcast to the result shape "
             << shapeToString(result.getShape());
  }
  return success();
}
