//===- GraphOps.cpp - Elementwise ops of the graph dialect ------*- C++ -*-===//
//
// Part of DistOpt. Verifiers of the elementwise ops: unary, clip, binary,
// where, cast, dropout.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using namespace distopt::graph;

/// Checks that `result` has the type of `input` (elementwise, type-keeping).
static LogicalResult verifySameType(Operation *op, RankedTensorType input,
                                    RankedTensorType result) {
  if (input.getElementType() != result.getElementType())
    return op->emitOpError("result element type ")
           << result.getElementType() << " differs from the operand's "
           << input.getElementType();
  return verifyResultShape(op, input.getShape(), result.getShape());
}

LogicalResult UnaryOp::verify() {
  if (getKind() == UnaryKind::IsNaN || getKind() == UnaryKind::IsInf) {
    if (!getResult().getType().getElementType().isInteger(1))
      return emitOpError("'")
             << stringifyUnaryKind(getKind()) << "' must yield i1 elements";
    return verifyResultShape(*this, getInput().getType().getShape(),
                             getResult().getType().getShape());
  }
  return verifySameType(*this, getInput().getType(), getResult().getType());
}

LogicalResult ClipOp::verify() {
  if (getMin() && getMax() &&
      getMin()->convertToDouble() > getMax()->convertToDouble())
    return emitOpError("'min' ")
           << getMin()->convertToDouble() << " is greater than 'max' "
           << getMax()->convertToDouble();
  return verifySameType(*this, getInput().getType(), getResult().getType());
}

static bool isComparison(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Equal:
  case BinaryKind::Less:
  case BinaryKind::LessEqual:
  case BinaryKind::Greater:
  case BinaryKind::GreaterEqual:
    return true;
  default:
    return false;
  }
}

static bool isLogical(BinaryKind kind) {
  return kind == BinaryKind::And || kind == BinaryKind::Or ||
         kind == BinaryKind::Xor;
}

LogicalResult BinaryOp::verify() {
  auto lhs = getLhs().getType(), rhs = getRhs().getType();
  auto result = getResult().getType();
  BinaryKind kind = getKind();
  if (getFmod() && kind != BinaryKind::Mod)
    return emitOpError("'fmod' applies only to kind 'mod', not '")
           << stringifyBinaryKind(kind) << "'";
  if (kind != BinaryKind::Pow && lhs.getElementType() != rhs.getElementType())
    return emitOpError("operand element types differ: ")
           << lhs.getElementType() << " vs " << rhs.getElementType();
  if (isLogical(kind) && !lhs.getElementType().isInteger(1))
    return emitOpError("'")
           << stringifyBinaryKind(kind) << "' needs i1 operands";
  Type expectedElem = isComparison(kind) || isLogical(kind)
                          ? Type(IntegerType::get(getContext(), 1))
                          : lhs.getElementType();
  if (result.getElementType() != expectedElem)
    return emitOpError("result element type ")
           << result.getElementType() << " should be " << expectedElem;
  auto shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return emitOpError("operand shapes ")
           << shapeToString(lhs.getShape()) << " and "
           << shapeToString(rhs.getShape()) << " do not broadcast";
  return verifyResultShape(*this, *shape, result.getShape());
}

LogicalResult WhereOp::verify() {
  auto cond = getCondition().getType(), lhs = getLhs().getType(),
       rhs = getRhs().getType(), result = getResult().getType();
  if (!cond.getElementType().isInteger(1))
    return emitOpError("condition must have i1 elements, got ")
           << cond.getElementType();
  if (lhs.getElementType() != rhs.getElementType() ||
      lhs.getElementType() != result.getElementType())
    return emitOpError("branch and result element types must match");
  auto shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (shape)
    shape = broadcastShapes(cond.getShape(), *shape);
  if (!shape)
    return emitOpError("shapes ")
           << shapeToString(cond.getShape()) << ", "
           << shapeToString(lhs.getShape()) << " and "
           << shapeToString(rhs.getShape()) << " do not broadcast";
  return verifyResultShape(*this, *shape, result.getShape());
}

LogicalResult CastOp::verify() {
  return verifyResultShape(*this, getInput().getType().getShape(),
                           getResult().getType().getShape());
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (ratio < 0.0 || ratio >= 1.0)
    return emitOpError("'ratio' must be in [0, 1), got ") << ratio;
  return verifySameType(*this, getInput().getType(), getResult().getType());
}
