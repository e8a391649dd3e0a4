//===- SchemaChecks.cpp - Nodes against their ONNX schemas ------*- C++ -*-===//
//
// Part of DistOpt. Implements SchemaChecks.h. Built with -fexceptions (see
// CMakeLists.txt): OpSchema::Verify reports by throwing.
//
//===----------------------------------------------------------------------===//
#include "SchemaChecks.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

using onnx::NodeProto;
using onnx::OpSchema;
using onnx::OpSchemaRegistry;

namespace distopt {
namespace import {

static llvm::Error error(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string nodeName(const onnx::GraphProto &graph, int i) {
  const NodeProto &n = graph.node(i);
  return n.name().empty() ? "#" + std::to_string(i) : n.name();
}

/// The opset version of each domain the model imports ("" for ai.onnx).
static std::unordered_map<std::string, int>
opsetVersions(const onnx::ModelProto &model) {
  std::unordered_map<std::string, int> versions;
  for (const auto &imp : model.opset_import()) {
    std::string domain = imp.domain() == "ai.onnx" ? "" : imp.domain();
    versions[domain] = static_cast<int>(imp.version());
  }
  return versions;
}

static const OpSchema *
schemaOf(const NodeProto &node,
         const std::unordered_map<std::string, int> &versions) {
  std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  auto it = versions.find(domain);
  if (it == versions.end())
    return nullptr;
  return OpSchemaRegistry::Schema(node.op_type(), it->second, domain);
}

/// Integer list attributes whose entries ONNX shape inference divides by or
/// loops over (convPoolShapeInference: `while (residual >= stride)`), with
/// the smallest valid entry.
struct AttrBound {
  const char *name;
  int64_t min;
};

/// The ops whose inference is ONNX's convPoolShapeInference.
static bool isConvOrPool(llvm::StringRef op) {
  return op == "Conv" || op == "ConvInteger" || op == "QLinearConv" ||
         op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" ||
         op == "LpPool" || op == "MaxUnpool" || op == "MaxRoiPool";
}

static llvm::ArrayRef<AttrBound> boundedAttributes(llvm::StringRef op) {
  static const AttrBound convLike[] = {{"strides", 1},
                                       {"dilations", 1},
                                       {"kernel_shape", 1},
                                       {"pads", 0},
                                       {"group", 1}};
  static const AttrBound blocks[] = {{"blocksize", 1}};
  if (isConvOrPool(op))
    return convLike;
  if (op == "SpaceToDepth" || op == "DepthToSpace")
    return blocks;
  return {};
}

/// Checks the attribute values ONNX 1.12's shape inference trusts. Its
/// convolutions and pools take any auto_pad other than NOTSET and VALID for
/// SAME (and pad by repeated subtraction: an unknown value there could
/// loop for ages).
static llvm::Error checkAttributeValues(const onnx::GraphProto &graph, int i) {
  const NodeProto &node = graph.node(i);
  if (isConvOrPool(node.op_type()))
    for (const auto &a : node.attribute())
      if (a.name() == "auto_pad" && a.s() != "NOTSET" && a.s() != "VALID" &&
          a.s() != "SAME_UPPER" && a.s() != "SAME_LOWER") {
        std::string shown;
        llvm::raw_string_ostream os(shown);
        os.write_escaped(a.s());
        return error("node '" + nodeName(graph, i) + "' (" + node.op_type() +
                     "): attribute 'auto_pad' is '" + shown +
                     "'; it must be NOTSET, SAME_UPPER, SAME_LOWER or VALID; "
                     "fix the model");
      }
  for (const AttrBound &bound : boundedAttributes(node.op_type()))
    for (const auto &a : node.attribute()) {
      if (a.name() != bound.name)
        continue;
      llvm::SmallVector<int64_t> values(a.ints().begin(), a.ints().end());
      if (a.type() == onnx::AttributeProto::INT)
        values.push_back(a.i());
      for (int64_t v : values)
        if (v < bound.min)
          return error("node '" + nodeName(graph, i) + "' (" + node.op_type() +
                       "): attribute '" + bound.name + "' has entry " +
                       std::to_string(v) + "; every entry must be >= " +
                       std::to_string(bound.min) + "; fix the model");
    }
  return llvm::Error::success();
}

llvm::Error checkNodeSchemas(const onnx::ModelProto &model) {
  auto versions = opsetVersions(model);
  const onnx::GraphProto &graph = model.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const NodeProto &node = graph.node(i);
    // Unknown op types have no schema; the importer keeps them opaque.
    if (const OpSchema *schema = schemaOf(node, versions)) {
      try {
        schema->Verify(node);
      } catch (const std::exception &e) {
        return error("node '" + nodeName(graph, i) + "' (" + node.op_type() +
                     ") does not match the ONNX " + node.op_type() + "-" +
                     std::to_string(schema->SinceVersion()) +
                     " schema: " + e.what() +
                     "; onnxruntime rejects it too: fix the exporter or the "
                     "model");
      }
    }
    if (llvm::Error e = checkAttributeValues(graph, i))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error
checkNodeTypes(const onnx::ModelProto &model,
               const llvm::StringMap<const onnx::TypeProto *> &types) {
  auto versions = opsetVersions(model);
  const onnx::GraphProto &graph = model.graph();
  std::unordered_map<std::string, int32_t> initTypes;
  for (const auto &t : graph.initializer())
    initTypes[t.name()] = t.data_type();
  for (int i = 0; i < graph.node_size(); ++i) {
    const NodeProto &node = graph.node(i);
    const OpSchema *schema = schemaOf(node, versions);
    if (!schema || schema->inputs().empty())
      continue;
    for (int k = 0; k < node.input_size(); ++k) {
      const std::string &name = node.input(k);
      if (name.empty())
        continue;
      size_t formal = std::min<size_t>(k, schema->inputs().size() - 1);
      const auto &allowed = schema->inputs()[formal].GetTypes();
      onnx::TypeProto type;
      if (auto it = initTypes.find(name); it != initTypes.end()) {
        type.mutable_tensor_type()->set_elem_type(it->second);
      } else if (auto it = types.find(name); it != types.end()) {
        if (!it->second->has_tensor_type() ||
            it->second->tensor_type().elem_type() == 0)
          continue;
        type.mutable_tensor_type()->set_elem_type(
            it->second->tensor_type().elem_type());
      } else {
        continue;
      }
      try {
        if (allowed.empty() ||
            allowed.count(onnx::Utils::DataTypeUtils::ToType(type)))
          continue;
      } catch (const std::exception &) {
        // An element type ONNX does not know: reported below.
      }
      std::vector<std::string> names;
      for (const auto &t : allowed)
        names.push_back(*t);
      std::sort(names.begin(), names.end());
      std::string list;
      for (const std::string &t : names)
        list += (list.empty() ? "" : ", ") + t;
      int32_t elem = type.tensor_type().elem_type();
      std::string elemName = onnx::TensorProto_DataType_IsValid(elem)
                                 ? onnx::TensorProto_DataType_Name(
                                       onnx::TensorProto_DataType(elem))
                                 : "#" + std::to_string(elem);
      return error(
          "node '" + nodeName(graph, i) + "' (" + node.op_type() + "): input " +
          std::to_string(k) + " ('" + name + "') has element type " + elemName +
          ", which " + node.op_type() + "-" +
          std::to_string(schema->SinceVersion()) +
          " does not accept (onnxruntime rejects it too); allowed: " + list);
    }
  }
  return llvm::Error::success();
}

} // namespace import
} // namespace distopt
