//===- Translator.cpp - ONNX nodes to graph ops: shared state ---*- C++ -*-===//
//
// Part of DistOpt. Value/constant bookkeeping, type conversion, attribute
// helpers and the opaque fallback used by every translation family.
//
//===----------------------------------------------------------------------===//
#include "Translator.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

namespace distopt {
namespace import {

Translator::Translator(OpBuilder &builder, StringRef fileName, int64_t opset,
                       const onnx::GraphProto &graph)
    : builder(builder), opset(opset), fileName(fileName.str()),
      types(collectValueTypes(graph)) {
  for (const auto &v : graph.input()) {
    const auto &type = v.type().tensor_type();
    if (type.has_shape() && llvm::all_of(type.shape().dim(), [](const auto &d) {
          return d.has_dim_value() && d.dim_value() == 1;
        }))
      scalarInputs += (scalarInputs.empty() ? "" : ", ") + v.name();
  }
  for (const auto &node : graph.node())
    hasBranches |= node.op_type() == "If" || node.op_type() == "Loop";
}

Value Translator::lookup(StringRef name) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto c = constants.find(name);
  if (c == constants.end())
    return nullptr;
  SmallVector<int64_t> shape(c->second.shape);
  auto type = RankedTensorType::get(shape, elementType(c->second.dtype));
  Value v = graph::ConstantOp::create(
      builder,
      NameLoc::get(builder.getStringAttr(name),
                   FileLineColLoc::get(builder.getContext(), fileName, 0, 0)),
      toElementsAttr(c->second, type));
  values[name] = v;
  return v;
}

Value Translator::operand(const NodeProto &node, int index) {
  if (!hasInput(node, index)) {
    emitError(node) << "node '" << node.name() << "' (" << node.op_type()
                    << ") needs input " << index
                    << "; fix the exporter or the model";
    return nullptr;
  }
  Value v = lookup(node.input(index));
  if (!v)
    emitError(node) << "value '" << node.input(index) << "' used by node '"
                    << node.name() << "' has no definition";
  return v;
}

const SmallTensor *Translator::constant(StringRef name) const {
  auto it = constants.find(name);
  return it == constants.end() ? nullptr : &it->second;
}

void Translator::define(StringRef name, Value value) { values[name] = value; }

void Translator::defineConstant(StringRef name, SmallTensor value) {
  constants[name] = std::move(value);
}

Type Translator::elementType(int32_t dtype) const {
  MLIRContext *ctx = builder.getContext();
  switch (dtype) {
  case TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  case TensorProto::BOOL:
    return IntegerType::get(ctx, 1);
  case TensorProto::INT8:
    return IntegerType::get(ctx, 8);
  case TensorProto::INT16:
    return IntegerType::get(ctx, 16);
  case TensorProto::INT32:
    return IntegerType::get(ctx, 32);
  case TensorProto::INT64:
    return IntegerType::get(ctx, 64);
  case TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case TensorProto::COMPLEX64:
    return ComplexType::get(Float32Type::get(ctx));
  case TensorProto::COMPLEX128:
    return ComplexType::get(Float64Type::get(ctx));
  default:
    return nullptr;
  }
}

RankedTensorType Translator::convertType(const onnx::TypeProto &type) const {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return nullptr;
  Type elem = elementType(type.tensor_type().elem_type());
  if (!elem)
    return nullptr;
  SmallVector<int64_t> shape;
  for (const auto &dim : type.tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0)
      return nullptr;
    shape.push_back(dim.dim_value());
  }
  return RankedTensorType::get(shape, elem);
}

RankedTensorType Translator::inferredType(StringRef name) const {
  auto it = types.find(name);
  return it == types.end() ? nullptr : convertType(*it->second);
}

RankedTensorType Translator::resultType(const NodeProto &node, int index) {
  if (index >= node.output_size() || node.output(index).empty()) {
    emitError(node) << "node '" << node.name() << "' (" << node.op_type()
                    << ") has no output " << index;
    return nullptr;
  }
  if (RankedTensorType t = inferredType(node.output(index))) {
    if (graph::tensorBytes(t))
      return t;
    emitError(node) << "'" << node.output(index) << "' (output " << index
                    << " of node '" << node.name() << "', op " << node.op_type()
                    << ") has shape " << graph::shapeToString(t.getShape())
                    << ", whose size in bytes does not fit in int64; fix "
                       "the model (or its --input-shape pins)";
    return nullptr;
  }
  auto diag = emitError(node)
              << "cannot infer a static shape for '" << node.output(index)
              << "' (output " << index << " of node '" << node.name()
              << "', op " << node.op_type()
              << "); the shapes of its inputs do not fit the op, or a graph "
                 "input has unknown dimensions: fix the model, or pin the "
                 "graph inputs with --input-shape=NAME:D0xD1x...";
  // Shapes behind an If depend on the branch it takes: a scalar input
  // given a value folds the condition and keeps one branch.
  if (hasBranches)
    diag << "; the model branches (If/Loop), so a shape may depend on an "
            "input's value: give scalar inputs their value with "
            "--input-value=NAME:VALUE"
         << (scalarInputs.empty() ? std::string()
                                  : " (scalar inputs: " + scalarInputs + ")");
  return nullptr;
}

Location Translator::loc(const NodeProto &node) {
  MLIRContext *ctx = builder.getContext();
  std::string name =
      node.name().empty()
          ? node.op_type() + ":" + (node.output_size() ? node.output(0) : "")
          : node.name();
  return NameLoc::get(StringAttr::get(ctx, name),
                      FileLineColLoc::get(ctx, fileName, 0, 0));
}

InFlightDiagnostic Translator::emitError(const NodeProto &node) {
  return mlir::emitError(loc(node));
}

const AttributeProto *Translator::attr(const NodeProto &node, StringRef name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t Translator::attrInt(const NodeProto &node, StringRef name,
                            int64_t def) {
  const AttributeProto *a = attr(node, name);
  return a ? a->i() : def;
}

double Translator::attrFloat(const NodeProto &node, StringRef name,
                             double def) {
  const AttributeProto *a = attr(node, name);
  return a ? a->f() : def;
}

std::string Translator::attrString(const NodeProto &node, StringRef name,
                                   StringRef def) {
  const AttributeProto *a = attr(node, name);
  return a ? a->s() : def.str();
}

std::optional<SmallVector<int64_t>> Translator::attrInts(const NodeProto &node,
                                                         StringRef name) {
  const AttributeProto *a = attr(node, name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

DictionaryAttr Translator::attrDictionary(const NodeProto &node) {
  Builder &b = builder;
  SmallVector<NamedAttribute> attrs;
  for (const AttributeProto &a : node.attribute()) {
    Attribute value;
    switch (a.type()) {
    case AttributeProto::INT:
      value = b.getI64IntegerAttr(a.i());
      break;
    case AttributeProto::FLOAT:
      value = b.getF32FloatAttr(a.f());
      break;
    case AttributeProto::STRING:
      value = b.getStringAttr(a.s());
      break;
    case AttributeProto::INTS:
      value = b.getDenseI64ArrayAttr(
          SmallVector<int64_t>(a.ints().begin(), a.ints().end()));
      break;
    case AttributeProto::FLOATS:
      value = b.getDenseF32ArrayAttr(
          SmallVector<float>(a.floats().begin(), a.floats().end()));
      break;
    case AttributeProto::STRINGS: {
      SmallVector<Attribute> strings;
      for (const std::string &s : a.strings())
        strings.push_back(b.getStringAttr(s));
      value = b.getArrayAttr(strings);
      break;
    }
    case AttributeProto::TENSOR: {
      // Small tensors are kept; large ones only by type (never inline
      // weight bytes).
      auto t = readSmallTensor(a.t());
      Type elem = elementType(a.t().data_type());
      SmallVector<int64_t> dims(a.t().dims().begin(), a.t().dims().end());
      if (t && elem)
        value = toElementsAttr(*t, RankedTensorType::get(dims, elem));
      else if (elem)
        value = TypeAttr::get(RankedTensorType::get(dims, elem));
      else
        value = b.getStringAttr("<tensor>");
      break;
    }
    default:
      value = b.getStringAttr("<unsupported attribute kind>");
      break;
    }
    attrs.push_back(b.getNamedAttr(a.name(), value));
  }
  return b.getDictionaryAttr(attrs);
}

LogicalResult translateNode(Translator &t, const NodeProto &node) {
  static const TranslateTable table = [] {
    TranslateTable table;
    registerMathTranslations(table);
    registerNNTranslations(table);
    registerDataTranslations(table);
    registerControlTranslations(table);
    return table;
  }();
  auto it = table.find(node.op_type());
  bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  // Translations produce output 0; a node that omits it stays opaque.
  bool hasMainOutput = node.output_size() > 0 && !node.output(0).empty();
  return defaultDomain && hasMainOutput && it != table.end()
             ? it->second(t, node)
             : t.emitOpaque(node);
}

LogicalResult Translator::emitOpaque(const NodeProto &node, ValueRange reads) {
  SmallVector<Value> inputs;
  SmallVector<int64_t> inputPositions;
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty())
      continue;
    Value v = operand(node, i);
    if (!v)
      return failure();
    inputs.push_back(v);
    inputPositions.push_back(i);
  }
  llvm::append_range(inputs, reads);
  // Unnamed (omitted optional) outputs get no result; output_indices then
  // records the ONNX position of each result.
  SmallVector<Type> resultTypes;
  SmallVector<int64_t> positions;
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    RankedTensorType t = resultType(node, i);
    if (!t)
      return failure();
    resultTypes.push_back(t);
    positions.push_back(i);
  }
  // Positions are only recorded when some are skipped.
  auto indices = [&](ArrayRef<int64_t> p) {
    bool dense = p.empty() || p.back() == int64_t(p.size()) - 1;
    return dense ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(p);
  };
  auto op = graph::OpaqueOp::create(
      builder, loc(node), resultTypes, builder.getStringAttr(node.op_type()),
      builder.getStringAttr(node.domain()), attrDictionary(node),
      indices(inputPositions), indices(positions), inputs);
  for (size_t i = 0; i < positions.size(); ++i)
    define(node.output(positions[i]), op.getResult(i));
  // Keys must outlive the proto's strings; intern them in the context.
  ++opaqueCounts[builder.getStringAttr(node.op_type()).getValue()];
  return success();
}

DenseElementsAttr toElementsAttr(const SmallTensor &value,
                                 RankedTensorType type) {
  Type elem = type.getElementType();
  if (auto ft = dyn_cast<FloatType>(elem)) {
    SmallVector<APFloat> v;
    for (int64_t i = 0, n = value.numElements(); i < n; ++i) {
      APFloat f(value.getDouble(i));
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      v.push_back(f);
    }
    return DenseElementsAttr::get(type, v);
  }
  unsigned width = elem.getIntOrFloatBitWidth();
  SmallVector<APInt> v;
  for (int64_t i = 0, n = value.numElements(); i < n; ++i)
    v.push_back(APInt(width, uint64_t(value.getInt(i)), /*isSigned=*/true,
                      /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, v);
}

} // namespace import
} // namespace distopt
