//===- GraphBuilder.cpp - Appends ONNX nodes and graph-only weights -------===//
//
// Part of DistOpt. See GraphBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "GraphBuilder.h"

#include "llvm/ADT/APFloat.h"

#include <cstdio>

using namespace distopt::modelgen;

onnx::AttributeProto distopt::modelgen::attrInt(llvm::StringRef name,
                                                int64_t value) {
  onnx::AttributeProto attr;
  attr.set_name(name.str());
  attr.set_type(onnx::AttributeProto::INT);
  attr.set_i(value);
  return attr;
}

onnx::AttributeProto
distopt::modelgen::attrInts(llvm::StringRef name,
                            llvm::ArrayRef<int64_t> values) {
  onnx::AttributeProto attr;
  attr.set_name(name.str());
  attr.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values)
    attr.add_ints(v);
  return attr;
}

onnx::AttributeProto distopt::modelgen::attrFloat(llvm::StringRef name,
                                                  float value) {
  onnx::AttributeProto attr;
  attr.set_name(name.str());
  attr.set_type(onnx::AttributeProto::FLOAT);
  attr.set_f(value);
  return attr;
}

onnx::AttributeProto distopt::modelgen::attrString(llvm::StringRef name,
                                                   llvm::StringRef value) {
  onnx::AttributeProto attr;
  attr.set_name(name.str());
  attr.set_type(onnx::AttributeProto::STRING);
  attr.set_s(value.str());
  return attr;
}

onnx::AttributeProto distopt::modelgen::attrTensor(llvm::StringRef name,
                                                   onnx::TensorProto value) {
  onnx::AttributeProto attr;
  attr.set_name(name.str());
  attr.set_type(onnx::AttributeProto::TENSOR);
  *attr.mutable_t() = std::move(value);
  return attr;
}

GraphBuilder::GraphBuilder(onnx::GraphProto &graph, const ModelOptions &options)
    : graph(graph), options(options) {}

Dim GraphBuilder::batch() const {
  if (options.microBatch > 0)
    return Dim(options.microBatch);
  return Dim("batch");
}

std::string GraphBuilder::fresh(llvm::StringRef opType) {
  std::string name = scope.empty() ? "" : "/" + scope;
  name += "/" + opType.str() + "_" + std::to_string(counter++);
  return name;
}

std::string GraphBuilder::weight(llvm::StringRef name,
                                 llvm::ArrayRef<int64_t> dims, bool trainable) {
  onnx::TensorProto *tensor = graph.add_initializer();
  std::string full = scope.empty() ? name.str() : scope + "." + name.str();
  tensor->set_name(full);
  tensor->set_data_type(elemType());
  uint64_t elements = 1;
  for (int64_t d : dims) {
    tensor->add_dims(d);
    elements *= static_cast<uint64_t>(d);
  }
  uint64_t length = elements * dtypeBytes(options.dtype);
  tensor->set_data_location(onnx::TensorProto::EXTERNAL);
  auto addEntry = [&](const char *key, std::string value) {
    onnx::StringStringEntryProto *entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(std::move(value));
  };
  addEntry("location", options.weightsLocation);
  addEntry("offset", std::to_string(nextOffset));
  addEntry("length", std::to_string(length));
  nextOffset += length;
  (trainable ? numParameters : numBuffers) += elements;
  return full;
}

std::vector<std::string>
GraphBuilder::nodeN(llvm::StringRef opType, llvm::ArrayRef<std::string> inputs,
                    unsigned numOutputs,
                    std::initializer_list<onnx::AttributeProto> attrs) {
  onnx::NodeProto *n = graph.add_node();
  std::string name = fresh(opType);
  n->set_name(name);
  n->set_op_type(opType.str());
  for (const std::string &in : inputs)
    n->add_input(in);
  std::vector<std::string> outs;
  for (unsigned i = 0; i < numOutputs; ++i) {
    outs.push_back(name + "_output_" + std::to_string(i));
    n->add_output(outs.back());
  }
  for (const onnx::AttributeProto &attr : attrs)
    *n->add_attribute() = attr;
  return outs;
}

std::string
GraphBuilder::node(llvm::StringRef opType, llvm::ArrayRef<std::string> inputs,
                   std::initializer_list<onnx::AttributeProto> attrs) {
  return nodeN(opType, inputs, 1, attrs).front();
}

std::string GraphBuilder::constI64(llvm::ArrayRef<int64_t> values,
                                   bool scalar) {
  std::string key = scalar ? "i64s:" : "i64:";
  for (int64_t v : values)
    key += std::to_string(v) + ",";
  auto it = constants.find(key);
  if (it != constants.end())
    return it->second;
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  if (!scalar)
    t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values)
    t.add_int64_data(v);
  std::string saved = scope;
  scope.clear();
  std::string out = node("Constant", {}, {attrTensor("value", std::move(t))});
  scope = saved;
  constants[key] = out;
  return out;
}

/// The APFloat semantics of `type`.
static const llvm::fltSemantics &semantics(DType type) {
  switch (type) {
  case DType::F16:
    return llvm::APFloat::IEEEhalf();
  case DType::BF16:
    return llvm::APFloat::BFloat();
  case DType::F32:
    break;
  }
  return llvm::APFloat::IEEEsingle();
}

std::string GraphBuilder::scalarNode(const std::string &key,
                                     const llvm::APFloat &value) {
  auto it = constants.find(key);
  if (it != constants.end())
    return it->second;
  onnx::TensorProto t;
  t.set_data_type(elemType());
  // One little-endian raw_data encoding serves f32, f16 and bf16 alike.
  uint64_t bits = value.bitcastToAPInt().getZExtValue();
  unsigned bytes = dtypeBytes(options.dtype);
  std::string raw(bytes, '\0');
  for (unsigned i = 0; i < bytes; ++i)
    raw[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
  t.set_raw_data(raw);
  std::string saved = scope;
  scope.clear();
  std::string out = node("Constant", {}, {attrTensor("value", std::move(t))});
  scope = saved;
  constants[key] = out;
  return out;
}

std::string GraphBuilder::constScalar(double value) {
  llvm::APFloat f(value);
  bool lost = false;
  f.convert(semantics(options.dtype), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  // Key by the exact bits: to_string would merge 1e-5 with 1e-12.
  char key[64];
  std::snprintf(key, sizeof(key), "scalar:%a", value);
  return scalarNode(key, f);
}

std::string GraphBuilder::dropout(const std::string &x) {
  if (options.dropout == 0)
    return x;
  auto it = constants.find("dropout");
  if (it == constants.end()) {
    // Shared by every Dropout: a float32 ratio (Dropout-13's T1 has no
    // bf16) and training_mode = true.
    std::string saved = scope;
    scope.clear();
    std::string ratio =
        constF32({static_cast<float>(options.dropout)}, /*dims=*/{});
    onnx::TensorProto on;
    on.set_data_type(onnx::TensorProto::BOOL);
    on.add_int32_data(1);
    std::string training =
        node("Constant", {}, {attrTensor("value", std::move(on))});
    scope = saved;
    constants["dropout"] = ratio;
    constants["dropout.training"] = training;
    it = constants.find("dropout");
  }
  return node("Dropout", {x, it->second, constants["dropout.training"]});
}

std::string GraphBuilder::constLowest() {
  return scalarNode("lowest",
                    llvm::APFloat::getLargest(semantics(options.dtype),
                                              /*Negative=*/true));
}

std::string GraphBuilder::rename(const std::string &value,
                                 llvm::StringRef newName) {
  for (onnx::NodeProto &n : *graph.mutable_node()) {
    for (std::string &out : *n.mutable_output())
      if (out == value)
        out = newName.str();
    for (std::string &in : *n.mutable_input())
      if (in == value)
        in = newName.str();
  }
  return newName.str();
}

std::string GraphBuilder::constF32(llvm::ArrayRef<float> values,
                                   llvm::ArrayRef<int64_t> dims) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t.add_dims(d);
  for (float v : values)
    t.add_float_data(v);
  return node("Constant", {}, {attrTensor("value", std::move(t))});
}

static void setType(onnx::ValueInfoProto *info, llvm::StringRef name,
                    int elemType, llvm::ArrayRef<Dim> dims) {
  info->set_name(name.str());
  onnx::TypeProto_Tensor *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elemType);
  onnx::TensorShapeProto *shape = tensor->mutable_shape();
  for (const Dim &d : dims) {
    onnx::TensorShapeProto_Dimension *dim = shape->add_dim();
    if (d.param.empty())
      dim->set_dim_value(d.value);
    else
      dim->set_dim_param(d.param);
  }
}

void GraphBuilder::input(llvm::StringRef name, int elemType,
                         llvm::ArrayRef<Dim> dims) {
  setType(graph.add_input(), name, elemType, dims);
}

void GraphBuilder::output(llvm::StringRef name, int elemType,
                          llvm::ArrayRef<Dim> dims) {
  setType(graph.add_output(), name, elemType, dims);
}

std::string GraphBuilder::linear(const std::string &x, llvm::StringRef name,
                                 int64_t in, int64_t out, bool bias) {
  std::string prefix = name.empty() ? "" : name.str() + ".";
  std::string y = matmul(x, weight(prefix + "weight", {in, out}));
  if (!bias)
    return y;
  return node("Add", {y, weight(prefix + "bias", {out})});
}

std::string GraphBuilder::layerNorm(const std::string &x, llvm::StringRef name,
                                    int64_t width, float eps) {
  return node("LayerNormalization",
              {x, weight((name + ".weight").str(), {width}),
               weight((name + ".bias").str(), {width})},
              {attrInt("axis", -1), attrFloat("epsilon", eps)});
}
