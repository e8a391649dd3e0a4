//===- TranslateMath.cpp - Elementwise math, matmul, softmax ----*- C++ -*-===//
//
// Part of DistOpt. ONNX elementwise unary/binary ops, Clip, Where, Cast,
// MatMul/Gemm and Softmax/LogSoftmax to the graph dialect.
//
//===----------------------------------------------------------------------===//
#include "Translator.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using namespace distopt::graph;
using onnx::NodeProto;

namespace distopt {
namespace import {

static std::optional<UnaryKind> unaryKind(StringRef op) {
  return llvm::StringSwitch<std::optional<UnaryKind>>(op)
      .Case("Relu", UnaryKind::Relu)
      .Case("Erf", UnaryKind::Erf)
      .Case("Tanh", UnaryKind::Tanh)
      .Case("Sigmoid", UnaryKind::Sigmoid)
      .Case("Exp", UnaryKind::Exp)
      .Case("Log", UnaryKind::Log)
      .Case("Sqrt", UnaryKind::Sqrt)
      .Case("Neg", UnaryKind::Neg)
      .Case("Abs", UnaryKind::Abs)
      .Case("Reciprocal", UnaryKind::Reciprocal)
      .Case("Floor", UnaryKind::Floor)
      .Case("Ceil", UnaryKind::Ceil)
      .Case("Round", UnaryKind::Round)
      .Case("Sin", UnaryKind::Sin)
      .Case("Cos", UnaryKind::Cos)
      .Case("Not", UnaryKind::Not)
      .Case("Sign", UnaryKind::Sign)
      .Case("Softplus", UnaryKind::Softplus)
      .Case("Softsign", UnaryKind::Softsign)
      .Case("HardSigmoid", UnaryKind::HardSigmoid)
      .Case("HardSwish", UnaryKind::HardSwish)
      .Case("LeakyRelu", UnaryKind::LeakyRelu)
      .Case("Elu", UnaryKind::Elu)
      .Case("IsNaN", UnaryKind::IsNaN)
      .Case("IsInf", UnaryKind::IsInf)
      .Default(std::nullopt);
}

static std::optional<BinaryKind> binaryKind(StringRef op) {
  return llvm::StringSwitch<std::optional<BinaryKind>>(op)
      .Case("Add", BinaryKind::Add)
      .Case("Sum", BinaryKind::Add)
      .Case("Sub", BinaryKind::Sub)
      .Case("Mul", BinaryKind::Mul)
      .Case("Div", BinaryKind::Div)
      .Case("Pow", BinaryKind::Pow)
      .Case("Max", BinaryKind::Max)
      .Case("Min", BinaryKind::Min)
      .Case("Mod", BinaryKind::Mod)
      .Case("Equal", BinaryKind::Equal)
      .Case("Less", BinaryKind::Less)
      .Case("LessOrEqual", BinaryKind::LessEqual)
      .Case("Greater", BinaryKind::Greater)
      .Case("GreaterOrEqual", BinaryKind::GreaterEqual)
      .Case("And", BinaryKind::And)
      .Case("Or", BinaryKind::Or)
      .Case("Xor", BinaryKind::Xor)
      .Case("PRelu", BinaryKind::PRelu)
      .Default(std::nullopt);
}

static LogicalResult translateUnary(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  UnaryKind kind = *unaryKind(node.op_type());
  FloatAttr alpha, beta;
  OpBuilder &b = t.builder;
  if (kind == UnaryKind::LeakyRelu)
    alpha = b.getF64FloatAttr(Translator::attrFloat(node, "alpha", 0.01));
  if (kind == UnaryKind::Elu)
    alpha = b.getF64FloatAttr(Translator::attrFloat(node, "alpha", 1.0));
  if (kind == UnaryKind::HardSigmoid) {
    alpha = b.getF64FloatAttr(Translator::attrFloat(node, "alpha", 0.2));
    beta = b.getF64FloatAttr(Translator::attrFloat(node, "beta", 0.5));
  }
  if (kind == UnaryKind::IsInf &&
      (Translator::attrInt(node, "detect_negative", 1) != 1 ||
       Translator::attrInt(node, "detect_positive", 1) != 1))
    return t.emitOpaque(node);
  return t.setResult(node,
                     UnaryOp::create(b, t.loc(node), type,
                                     UnaryKindAttr::get(b.getContext(), kind),
                                     x, alpha, beta));
}

/// Identity aliases its input, except that an Identity of a weight is a
/// parameter of its own (Translator::untieIdentityWeights): torch.onnx
/// writes parameters with equal values (zero biases, unit norm scales)
/// once and the others as Identity of it, and training must update them
/// separately, as PyTorch does.
static LogicalResult translateIdentity(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  if (!x)
    return failure();
  auto w = x.getDefiningOp<WeightOp>();
  if (!w || !t.untieIdentityWeights)
    return t.setResult(node, x);
  OpBuilder &b = t.builder;
  auto copy = cast<WeightOp>(b.clone(*w));
  copy.setSymName(node.output(0));
  copy->setLoc(NameLoc::get(b.getStringAttr(node.output(0)), w->getLoc()));
  return t.setResult(node, copy);
}

/// Binary ops, and the variadic Sum/Max/Min folded left to right.
static LogicalResult translateBinary(Translator &t, const NodeProto &node) {
  BinaryKind kind;
  if (node.op_type() == "BitShift")
    kind = Translator::attrString(node, "direction", "") == "LEFT"
               ? BinaryKind::BitShiftLeft
               : BinaryKind::BitShiftRight;
  else
    kind = *binaryKind(node.op_type());
  RankedTensorType type = t.resultType(node, 0);
  Value acc = t.operand(node, 0);
  if (!acc || !type)
    return failure();
  if (node.input_size() == 1)
    return t.setResult(node, acc);
  for (int i = 1; i < node.input_size(); ++i) {
    Value rhs = t.operand(node, i);
    if (!rhs)
      return failure();
    RankedTensorType stepType = type;
    if (i + 1 < node.input_size()) {
      auto lt = cast<RankedTensorType>(acc.getType());
      auto rt = cast<RankedTensorType>(rhs.getType());
      auto shape = broadcastShapes(lt.getShape(), rt.getShape());
      if (!shape)
        return t.emitOpaque(node);
      stepType = RankedTensorType::get(*shape, type.getElementType());
    }
    // ONNX Mod with fmod = 1 takes the dividend's sign (C fmod / %).
    bool fmod = kind == BinaryKind::Mod &&
                Translator::attrInt(node, "fmod", 0) != 0;
    acc = BinaryOp::create(t.builder, t.loc(node), stepType, kind, acc, rhs,
                           fmod);
  }
  return t.setResult(node, acc);
}

static LogicalResult translateWhere(Translator &t, const NodeProto &node) {
  Value c = t.operand(node, 0), x = t.operand(node, 1), y = t.operand(node, 2);
  RankedTensorType type = t.resultType(node, 0);
  if (!c || !x || !y || !type)
    return failure();
  return t.setResult(node,
                     WhereOp::create(t.builder, t.loc(node), type, c, x, y));
}

/// Clip whose bounds are computed at run time: min(max(x, lo), hi) as
/// `graph.binary max` / `min` with the scalar bounds (ONNX's definition).
static LogicalResult clipByBounds(Translator &t, const NodeProto &node, Value x,
                                  RankedTensorType type) {
  Value y = x;
  for (auto [i, kind] : {std::pair{1, BinaryKind::Max}, {2, BinaryKind::Min}}) {
    if (!Translator::hasInput(node, i))
      continue;
    Value bound = t.operand(node, i);
    if (!bound)
      return failure();
    auto bt = cast<RankedTensorType>(bound.getType());
    if (bt.getRank() != 0 || bt.getElementType() != type.getElementType())
      return t.emitOpaque(node);
    y = BinaryOp::create(t.builder, t.loc(node), type, kind, y, bound, false);
  }
  return t.setResult(node, y);
}

static LogicalResult translateClip(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  FloatAttr lo, hi;
  OpBuilder &b = t.builder;
  if (t.opset < 11) {
    if (Translator::attr(node, "min"))
      lo = b.getF64FloatAttr(Translator::attrFloat(node, "min", 0));
    if (Translator::attr(node, "max"))
      hi = b.getF64FloatAttr(Translator::attrFloat(node, "max", 0));
  } else {
    bool constant = true;
    for (int i : {1, 2}) {
      if (!Translator::hasInput(node, i))
        continue;
      const SmallTensor *c = t.constantInput(node, i);
      if (c && c->numElements() == 1)
        (i == 1 ? lo : hi) = b.getF64FloatAttr(c->getDouble(0));
      else
        constant = false;
    }
    if (!constant)
      return clipByBounds(t, node, x, type);
  }
  return t.setResult(node, ClipOp::create(b, t.loc(node), type, x, lo, hi));
}

static LogicalResult translateCast(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  if (x.getType() == type)
    return t.setResult(node, x);
  return t.setResult(node, CastOp::create(t.builder, t.loc(node), type, x));
}

static LogicalResult translateMatMul(Translator &t, const NodeProto &node) {
  Value a = t.operand(node, 0), b = t.operand(node, 1);
  RankedTensorType type = t.resultType(node, 0);
  if (!a || !b || !type)
    return failure();
  OpBuilder &builder = t.builder;
  if (node.op_type() == "MatMul")
    return t.setResult(
        node, MatmulOp::create(
                  builder, t.loc(node), type, a, b, Value(),
                  builder.getBoolAttr(false), builder.getBoolAttr(false),
                  builder.getF64FloatAttr(1.0), builder.getF64FloatAttr(1.0)));
  Value c;
  if (Translator::hasInput(node, 2) && !(c = t.operand(node, 2)))
    return failure();
  double beta = Translator::attrFloat(node, "beta", 1.0);
  return t.setResult(
      node,
      MatmulOp::create(
          builder, t.loc(node), type, a, b, c,
          builder.getBoolAttr(Translator::attrInt(node, "transA", 0)),
          builder.getBoolAttr(Translator::attrInt(node, "transB", 0)),
          builder.getF64FloatAttr(Translator::attrFloat(node, "alpha", 1.0)),
          builder.getF64FloatAttr(beta)));
}

static LogicalResult translateSoftmax(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  int64_t rank = type.getRank();
  int64_t axis = Translator::attrInt(node, "axis", t.opset < 13 ? 1 : -1);
  // Before opset 13 softmax normalized the flattened [axis, rank) block;
  // that is a per-axis softmax only when axis is the last dimension.
  if (t.opset < 13) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a != rank - 1)
      return t.emitOpaque(node);
  }
  OpBuilder &b = t.builder;
  auto op = SoftmaxOp::create(
      b, t.loc(node), type, x, b.getI64IntegerAttr(axis),
      node.op_type() == "LogSoftmax" ? b.getUnitAttr() : UnitAttr());
  return t.setResult(node, op);
}

void registerMathTranslations(TranslateTable &table) {
  for (StringRef op :
       {"Relu",      "Erf",       "Tanh",     "Sigmoid",  "Exp",
        "Log",       "Sqrt",      "Neg",      "Abs",      "Reciprocal",
        "Floor",     "Ceil",      "Round",    "Sin",      "Cos",
        "Not",       "Sign",      "Softplus", "Softsign", "HardSigmoid",
        "HardSwish", "LeakyRelu", "Elu",      "IsNaN",    "IsInf"})
    table[op] = translateUnary;
  for (StringRef op :
       {"Add", "Sum", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Equal",
        "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
        "PRelu", "BitShift"})
    table[op] = translateBinary;
  table["Identity"] = translateIdentity;
  table["Where"] = translateWhere;
  table["Clip"] = translateClip;
  table["Cast"] = translateCast;
  // CastLike's target type is its second input's, which shape inference
  // gave the result; that input's values are not read.
  table["CastLike"] = translateCast;
  table["MatMul"] = translateMatMul;
  table["Gemm"] = translateMatMul;
  table["Einsum"] = translateEinsum;
  table["Softmax"] = translateSoftmax;
  table["LogSoftmax"] = translateSoftmax;
}

} // namespace import
} // namespace distopt
