//===- ModelChecks.cpp - Structural checks of an ONNX model -----*- C++ -*-===//
//
// Part of DistOpt. Implements ModelChecks.h.
//
//===----------------------------------------------------------------------===//
#include "ModelChecks.h"
#include "SmallTensor.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <onnx/onnx_pb.h>

using namespace llvm;

namespace distopt {
namespace import {

static Error error(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message.str());
}

static bool isDefaultDomain(StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

Expected<int64_t> checkOpsets(const onnx::ModelProto &model) {
  int64_t opset = -1;
  for (const auto &imp : model.opset_import())
    if (isDefaultDomain(imp.domain()))
      opset = imp.version();
  if (opset < 0)
    return error("the model imports no default-domain (ai.onnx) opset; "
                 "re-export it with an opset between " +
                 Twine(kMinOpset) + " and " + Twine(kMaxOpset));
  if (opset < kMinOpset || opset > kMaxOpset)
    return error(
        "opset " + Twine(opset) +
        " is not supported (supported: default-domain opsets " +
        Twine(kMinOpset) + ".." + Twine(kMaxOpset) +
        "); re-export the model with opset_version=" + Twine(kMaxOpset) +
        " or convert it with "
        "onnx.version_converter");
  for (const auto &node : model.graph().node()) {
    StringRef domain = node.domain();
    if (isDefaultDomain(domain) || domain == "ai.onnx.ml")
      continue;
    return error("node '" + node.name() + "': op '" + node.op_type() +
                 "' is in domain '" + domain +
                 "', which the importer does not know (supported: ai.onnx, "
                 "ai.onnx.ml); replace the node with standard ONNX ops");
  }
  return opset;
}

/// ONNX graphs are in single static assignment form: every name is defined
/// once (an initializer may also be listed as a graph input, its default).
static Error checkUniqueNames(const onnx::GraphProto &graph) {
  StringSet<> inputs, initializers;
  for (const auto &v : graph.input()) {
    if (v.name().empty())
      return error("a graph input has an empty name; name every input");
    if (!inputs.insert(v.name()).second)
      return error("graph input '" + v.name() +
                   "' is listed twice; ONNX names every value once "
                   "(onnxruntime rejects the model too): rename or remove "
                   "one");
  }
  for (const auto &t : graph.initializer())
    if (!initializers.insert(t.name()).second)
      return error("initializer '" + t.name() +
                   "' is defined twice; ONNX names every value once "
                   "(onnxruntime rejects the model too): remove one");
  StringSet<> outputs;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &out : graph.node(i).output()) {
      if (out.empty())
        continue;
      const char *what = inputs.contains(out)         ? "a graph input"
                         : initializers.contains(out) ? "an initializer"
                         : outputs.contains(out)      ? "another node"
                                                      : nullptr;
      if (what)
        return error("value '" + out + "' computed by node '" +
                     (graph.node(i).name().empty() ? "#" + std::to_string(i)
                                                   : graph.node(i).name()) +
                     "' (" + graph.node(i).op_type() +
                     ") is already defined by " + what +
                     "; ONNX names every value once (onnxruntime rejects "
                     "the model too): rename one");
      outputs.insert(out);
    }
  return Error::success();
}

Error checkDefinitions(const onnx::GraphProto &graph) {
  if (Error e = checkUniqueNames(graph))
    return e;
  StringSet<> defined;
  for (const auto &v : graph.input())
    defined.insert(v.name());
  for (const auto &t : graph.initializer())
    defined.insert(t.name());
  StringMap<int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &out : graph.node(i).output())
      if (!out.empty())
        producer[out] = i;
  auto nodeName = [&](int i) {
    const auto &n = graph.node(i);
    return n.name().empty() ? "#" + std::to_string(i) + " (" + n.op_type() + ")"
                            : n.name();
  };
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    // ONNX shape inference divides by the output count of some ops (Split):
    // refuse output-less nodes before it runs.
    if (llvm::all_of(node.output(),
                     [](const std::string &o) { return o.empty(); }))
      return error("node '" + nodeName(i) + "' (" + node.op_type() +
                   ") has no outputs; remove it or name its outputs");
    for (const std::string &in : node.input()) {
      if (in.empty() || defined.contains(in))
        continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return error("value '" + in + "' used by node '" + nodeName(i) +
                     "' is not defined (not a graph input, initializer or "
                     "node output); fix the exporter or the model");
      // Defined later: a cycle if the producer depends on this node.
      SmallVector<int> work = {it->second};
      DenseSet<int> seen;
      bool cycle = false;
      while (!work.empty() && !cycle) {
        int n = work.pop_back_val();
        if (n == i) {
          cycle = true;
          break;
        }
        if (!seen.insert(n).second)
          continue;
        for (const std::string &dep : graph.node(n).input()) {
          auto p = producer.find(dep);
          if (p != producer.end() && !defined.contains(dep))
            work.push_back(p->second);
        }
      }
      if (cycle)
        return error("the graph has a cycle: node '" + nodeName(i) +
                     "' uses value '" + in + "', which node '" +
                     nodeName(it->second) + "' computes from node '" +
                     nodeName(i) +
                     "''s own result; ONNX graphs must be acyclic");
      return error("value '" + in + "' is used by node '" + nodeName(i) +
                   "' before it is defined by node '" + nodeName(it->second) +
                   "' (ONNX requires nodes in topological order); re-save the "
                   "model with its nodes sorted");
    }
    for (const std::string &out : node.output())
      if (!out.empty())
        defined.insert(out);
  }
  return Error::success();
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

/// True when \p s is a C identifier: a dim_param a shell and a placeholder
/// can show as it is.
static bool isIdentifier(StringRef s) {
  return !s.empty() && (isAlpha(s[0]) || s[0] == '_') &&
         llvm::all_of(s, [](char c) { return isAlnum(c) || c == '_'; });
}

/// "--input-dim NAME=N", quoted for a shell when NAME is not an identifier.
static std::string inputDimHint(StringRef param) {
  // A dimension named N gets a placeholder that is not its own name.
  std::string spec =
      (param + (param.equals_insensitive("n") ? "=SIZE" : "=N")).str();
  return "--input-dim " + (isIdentifier(param) ? spec : "'" + spec + "'");
}

/// The shape to suggest in "--input-shape=NAME:..." for \p dims: the
/// dimensions the model (or --input-dim) fixes, and a placeholder for each
/// open one (its dim_param in capitals, or Dk), never a guessed number.
static std::string suggestedShape(const onnx::TensorShapeProto &dims,
                                  const StringMap<int64_t> &inputDims) {
  std::string s;
  for (int k = 0; k < dims.dim_size(); ++k) {
    const auto &dim = dims.dim(k);
    s += k ? "x" : "";
    auto pinned =
        dim.has_dim_param() ? inputDims.find(dim.dim_param()) : inputDims.end();
    if (dim.has_dim_value())
      s += std::to_string(dim.dim_value());
    else if (pinned != inputDims.end())
      s += std::to_string(pinned->second);
    else if (isIdentifier(dim.dim_param()))
      s += StringRef(dim.dim_param()).upper();
    else
      s += "D" + std::to_string(k);
  }
  return s;
}

/// Checks that every --input-dim name is a dim_param of some graph input
/// (not an initializer's).
static Error checkInputDimNames(const onnx::GraphProto &graph,
                                const ONNXImportOptions &options,
                                const StringSet<> &initializers) {
  if (options.inputDims.empty())
    return Error::success();
  SetVector<StringRef> params;
  for (const auto &input : graph.input())
    if (!initializers.contains(input.name()))
      for (const auto &dim : input.type().tensor_type().shape().dim())
        if (!dim.has_dim_value() && !dim.dim_param().empty())
          params.insert(dim.dim_param());
  // Sorted: the message is the same whatever the map's order.
  SmallVector<StringRef> names;
  for (const auto &entry : options.inputDims)
    names.push_back(entry.getKey());
  llvm::sort(names);
  for (StringRef name : names) {
    if (params.contains(name))
      continue;
    std::string known;
    for (StringRef p : params)
      known += (known.empty() ? "'" : ", '") + p.str() + "'";
    return error("--input-dim names '" + name +
                 "', which no graph input uses as a symbolic dimension " +
                 (known.empty() ? "(the graph inputs have none)"
                                : "(the graph inputs have " + known + ")"));
  }
  return Error::success();
}

Error pinInputShapes(onnx::GraphProto &graph, const ONNXImportOptions &options,
                     std::vector<std::string> &remarks) {
  StringSet<> initializers;
  for (const auto &t : graph.initializer())
    initializers.insert(t.name());
  if (Error e = checkInputDimNames(graph, options, initializers))
    return e;
  StringSet<> seen;
  std::string names;
  for (auto &input : *graph.mutable_input()) {
    if (initializers.contains(input.name()))
      continue;
    seen.insert(input.name());
    names += (names.empty() ? "" : ", ") + input.name();
    if (!input.type().has_tensor_type())
      return error("graph input '" + input.name() +
                   "' is not a tensor; only tensor inputs are supported");
    auto *tensor = input.mutable_type()->mutable_tensor_type();
    auto pinned = options.inputShapes.find(input.name());
    if (pinned != options.inputShapes.end()) {
      ArrayRef<int64_t> shape = pinned->second;
      auto *dims = tensor->mutable_shape();
      if (tensor->has_shape() && dims->dim_size() != int(shape.size()))
        return error("--input-shape=" + input.name() + ":" +
                     shapeString(shape) + " has rank " + Twine(shape.size()) +
                     " but input '" + input.name() + "' has rank " +
                     Twine(dims->dim_size()) + "; give " +
                     Twine(dims->dim_size()) + " dimensions");
      for (int d = 0; d < dims->dim_size(); ++d) {
        const auto &dim = dims->dim(d);
        if (dim.has_dim_value() && dim.dim_value() != shape[d])
          return error("--input-shape=" + input.name() + ":" +
                       shapeString(shape) + " sets dim " + Twine(d) + " to " +
                       Twine(shape[d]) + " but the model fixes it to " +
                       Twine(dim.dim_value()) +
                       "; only dimensions the model leaves open can change");
        // An explicit shape must agree with the dimension's --input-dim.
        auto named = dim.has_dim_param()
                         ? options.inputDims.find(dim.dim_param())
                         : options.inputDims.end();
        if (!dim.has_dim_value() && named != options.inputDims.end() &&
            named->second != shape[d])
          return error("--input-shape=" + input.name() + ":" +
                       shapeString(shape) + " sets dim " + Twine(d) + " ('" +
                       dim.dim_param() + "') to " + Twine(shape[d]) +
                       " but --input-dim " + dim.dim_param() + "=" +
                       Twine(named->second) +
                       " pins it; give both the same value, or drop one");
      }
      dims->clear_dim();
      for (int64_t v : shape)
        dims->add_dim()->set_dim_value(v);
      continue;
    }
    if (!tensor->has_shape())
      return error("graph input '" + input.name() +
                   "' has no shape; pass --input-shape=" + input.name() +
                   ":D0xD1x...");
    auto *dims = tensor->mutable_shape();
    // The model's dimensions, for the suggestions below.
    onnx::TensorShapeProto declared = *dims;
    for (int d = 0; d < dims->dim_size(); ++d) {
      auto *dim = dims->mutable_dim(d);
      if (dim->has_dim_value())
        continue;
      StringRef param =
          dim->has_dim_param() ? StringRef(dim->dim_param()) : StringRef();
      auto named = options.inputDims.find(param);
      if (!param.empty() && named != options.inputDims.end()) {
        dim->set_dim_value(named->second);
        continue;
      }
      std::string shapeHint = "--input-shape=" + input.name() + ":" +
                              suggestedShape(declared, options.inputDims);
      if (d == 0) {
        remarks.push_back(
            formatv("input '{0}': dynamic leading dimension '{1}' set to {2}; "
                    "pin it with {3}",
                    input.name(), param.empty() ? "?" : param,
                    options.defaultBatch,
                    param.empty() ? shapeHint
                                  : inputDimHint(param) + " or " + shapeHint)
                .str());
        dim->set_dim_value(options.defaultBatch);
        continue;
      }
      if (param.empty())
        return error("input '" + input.name() +
                     "' has an unnamed dynamic dimension (dim " + Twine(d) +
                     "), which is not the leading (batch) dimension; pin it "
                     "with " +
                     shapeHint);
      return error("input '" + input.name() + "' has symbolic dimension '" +
                   param + "' (dim " + Twine(d) +
                   "), which is not the leading (batch) dimension; pin it "
                   "with " +
                   inputDimHint(param) + " (every input that uses it) or " +
                   shapeHint);
    }
  }
  for (const auto &entry : options.inputShapes)
    if (!seen.contains(entry.getKey()))
      return error("--input-shape names '" + entry.getKey() +
                   "', which is not a graph input (inputs: " + names + ")");
  return Error::success();
}

Error bindInputValues(onnx::GraphProto &graph,
                      const ONNXImportOptions &options) {
  if (options.inputValues.empty())
    return Error::success();
  std::string names;
  onnx::GraphProto kept;
  std::vector<onnx::NodeProto> constants;
  StringSet<> bound;
  for (const auto &input : graph.input()) {
    auto it = options.inputValues.find(input.name());
    if (it == options.inputValues.end()) {
      names += (names.empty() ? "" : ", ") + input.name();
      *kept.add_input() = input;
      continue;
    }
    const auto &tensor = input.type().tensor_type();
    int64_t n = 1;
    for (const auto &d : tensor.shape().dim())
      n *= d.has_dim_value() ? d.dim_value() : -1;
    if (n != 1)
      return error("--input-value=" + input.name() + ":... fixes a scalar, but "
                   "input '" + input.name() + "' is not a one-element tensor; "
                   "fix shapes with --input-shape");
    SmallTensor value;
    value.dtype = tensor.elem_type();
    for (const auto &d : tensor.shape().dim())
      value.shape.push_back(d.dim_value());
    double v = it->second;
    if (value.isFloat())
      value.floats = {v};
    else if (isFoldableType(value.dtype) && v == (double)(int64_t)v)
      value.ints = {(int64_t)v};
    else
      return error("--input-value=" + input.name() + ":" + formatv("{0}", v) +
                   ": input '" + input.name() + "' has ONNX element type " +
                   Twine(value.dtype) + ", which takes " +
                   (isFoldableType(value.dtype) ? "an integer" : "no value"));
    onnx::NodeProto node;
    node.set_op_type("Constant");
    node.set_name(input.name() + "/input-value");
    node.add_output(input.name());
    onnx::AttributeProto *attr = node.add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    writeSmallTensor(value, *attr->mutable_t());
    constants.push_back(std::move(node));
    bound.insert(input.name());
  }
  for (const auto &entry : options.inputValues)
    if (!bound.contains(entry.getKey()))
      return error("--input-value names '" + entry.getKey() +
                   "', which is not a graph input (inputs: " + names + ")");
  graph.mutable_input()->Swap(kept.mutable_input());
  // The constants go first: every node may read them.
  onnx::GraphProto nodes;
  for (onnx::NodeProto &c : constants)
    *nodes.add_node() = std::move(c);
  for (onnx::NodeProto &node : *graph.mutable_node())
    *nodes.add_node() = std::move(node);
  graph.mutable_node()->Swap(nodes.mutable_node());
  return Error::success();
}

} // namespace import
} // namespace distopt
