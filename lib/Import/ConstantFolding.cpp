//===- ConstantFolding.cpp - Fold shape subgraphs to constants --*- C++ -*-===//
//
// Part of DistOpt. Exporters compute reshape targets at run time:
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape. Once the graph inputs
// are pinned every such value is a small constant; this file evaluates those
// subgraphs on SmallTensors and replaces the nodes by Constant nodes.
//
//===----------------------------------------------------------------------===//
#include "SmallTensor.h"

#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>

using namespace llvm;
using onnx::NodeProto;
using onnx::TensorProto;

namespace distopt {
namespace import {

namespace {
using Inputs = ArrayRef<const SmallTensor *>;

bool isOneOf(StringRef op, std::initializer_list<StringRef> names) {
  return llvm::is_contained(names, op);
}

const onnx::AttributeProto *findAttr(const NodeProto &node, StringRef name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t intAttr(const NodeProto &node, StringRef name, int64_t def) {
  const auto *a = findAttr(node, name);
  return a ? a->i() : def;
}

std::optional<SmallVector<int64_t>> intsAttr(const NodeProto &node,
                                             StringRef name) {
  const auto *a = findAttr(node, name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

SmallVector<int64_t> strides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// A tensor of `dtype`/`shape` whose element i is `get(i)`. Callers check
/// that `shape` is small; a larger one gets no elements (and is never
/// folded: foldConstants skips results above kMaxInlineElements).
template <typename Fn>
SmallTensor build(int32_t dtype, ArrayRef<int64_t> shape, Fn get) {
  SmallTensor out;
  out.dtype = dtype;
  out.shape.assign(shape.begin(), shape.end());
  int64_t n = out.numElements();
  if (n > kMaxInlineElements)
    return out;
  for (int64_t i = 0; i < n; ++i) {
    if (out.isFloat())
      out.floats.push_back(get(i));
    else
      out.ints.push_back(toInt64(get(i)));
  }
  return out;
}

/// Index of element `flat` of a tensor of `outShape` in a tensor of `shape`
/// broadcast to it.
int64_t broadcastIndex(int64_t flat, ArrayRef<int64_t> outShape,
                       ArrayRef<int64_t> shape) {
  SmallVector<int64_t> os = strides(outShape), is = strides(shape);
  int64_t offset = outShape.size() - shape.size(), idx = 0;
  for (size_t d = 0; d < outShape.size(); ++d) {
    int64_t coord = (flat / os[d]) % outShape[d];
    if (int64_t(d) >= offset && shape[d - offset] != 1)
      idx += coord * is[d - offset];
  }
  return idx;
}

std::optional<SmallTensor> elementwise(StringRef op, Inputs in) {
  SmallVector<int64_t> shape = in[0]->shape;
  for (const SmallTensor *t : in.drop_front()) {
    auto b = graph::broadcastShapes(shape, t->shape);
    if (!b)
      return std::nullopt;
    shape = *b;
  }
  std::optional<int64_t> n = graph::numElements(shape);
  if (!n || *n > kMaxInlineElements)
    return std::nullopt;
  bool isCompare = isOneOf(op, {"Equal", "Less", "Greater", "LessOrEqual",
                                "GreaterOrEqual", "And", "Or", "Not"});
  int32_t dtype = isCompare       ? TensorProto::BOOL
                  : op == "Where" ? in[1]->dtype
                                  : in[0]->dtype;
  bool isFloat = in.back()->isFloat() || in[0]->isFloat();
  auto arg = [&](unsigned k, int64_t i) {
    return in[k]->getDouble(broadcastIndex(i, shape, in[k]->shape));
  };
  auto iarg = [&](unsigned k, int64_t i) {
    return in[k]->getInt(broadcastIndex(i, shape, in[k]->shape));
  };
  std::optional<SmallTensor> failed;
  bool bad = false;
  SmallTensor out = build(dtype, shape, [&](int64_t i) -> double {
    if (op == "Where")
      return iarg(0, i) ? arg(1, i) : arg(2, i);
    if (op == "Neg")
      return -arg(0, i);
    if (op == "Abs")
      return std::fabs(arg(0, i));
    if (op == "Sqrt")
      return std::sqrt(arg(0, i));
    if (op == "Floor")
      return std::floor(arg(0, i));
    if (op == "Ceil")
      return std::ceil(arg(0, i));
    if (op == "Not")
      return !iarg(0, i);
    double a = arg(0, i), b = arg(1, i);
    if (op == "Add")
      return a + b;
    if (op == "Sub")
      return a - b;
    if (op == "Mul")
      return a * b;
    if (op == "Div") {
      if (!isFloat) {
        int64_t x = iarg(0, i), y = iarg(1, i);
        // x / 0 and INT64_MIN / -1 trap; leave them to the program.
        if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min())) {
          bad = true;
          return 0;
        }
        return double(x / y);
      }
      return a / b;
    }
    if (op == "Mod") {
      if (isFloat)
        return std::fmod(a, b);
      int64_t x = iarg(0, i), y = iarg(1, i);
      if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min())) {
        bad = true;
        return 0;
      }
      int64_t r = x % y;
      return double((r != 0 && ((r < 0) != (y < 0))) ? r + y : r);
    }
    if (op == "Pow")
      return std::pow(a, b);
    if (op == "Max")
      return std::max(a, b);
    if (op == "Min")
      return std::min(a, b);
    if (op == "Equal")
      return a == b;
    if (op == "Less")
      return a < b;
    if (op == "Greater")
      return a > b;
    if (op == "LessOrEqual")
      return a <= b;
    if (op == "GreaterOrEqual")
      return a >= b;
    if (op == "And")
      return iarg(0, i) && iarg(1, i);
    if (op == "Or")
      return iarg(0, i) || iarg(1, i);
    bad = true;
    return 0;
  });
  if (bad)
    return failed;
  // Integer results computed in double lose nothing for the magnitudes of
  // shape arithmetic, but Add/Sub/Mul on int64 are redone exactly.
  if (!out.isFloat() && !isCompare && !isFloat &&
      (op == "Add" || op == "Sub" || op == "Mul" || op == "Max" || op == "Min"))
    for (int64_t i = 0; i < out.numElements(); ++i) {
      int64_t a = iarg(0, i), b = iarg(1, i);
      std::optional<int64_t> r = op == "Add"   ? llvm::checkedAdd(a, b)
                                 : op == "Sub" ? llvm::checkedSub(a, b)
                                 : op == "Mul" ? llvm::checkedMul(a, b)
                                 : op == "Max" ? std::max(a, b)
                                               : std::min(a, b);
      // Overflowing shape arithmetic is not folded.
      if (!r)
        return failed;
      out.ints[i] = *r;
    }
  return out;
}

std::optional<SmallTensor> gather(const NodeProto &node, Inputs in) {
  const SmallTensor &data = *in[0], &idx = *in[1];
  int64_t rank = data.shape.size();
  auto axis = graph::normalizeAxis(intAttr(node, "axis", 0), rank);
  if (!axis)
    return std::nullopt;
  SmallVector<int64_t> shape(data.shape.begin(), data.shape.begin() + *axis);
  shape.append(idx.shape.begin(), idx.shape.end());
  shape.append(data.shape.begin() + *axis + 1, data.shape.end());
  std::optional<int64_t> count = graph::numElements(shape);
  if (!count || *count > kMaxInlineElements)
    return std::nullopt;
  int64_t inner = 1, dim = data.shape[*axis];
  for (int64_t d = *axis + 1; d < rank; ++d)
    inner *= data.shape[d];
  int64_t nIdx = idx.numElements();
  bool bad = false;
  SmallTensor out = build(data.dtype, shape, [&](int64_t i) -> double {
    int64_t o = i / (nIdx * inner), k = (i / inner) % nIdx, r = i % inner;
    int64_t j = idx.getInt(k);
    if (j < 0)
      j += dim;
    if (j < 0 || j >= dim) {
      bad = true;
      return 0;
    }
    return data.getDouble((o * dim + j) * inner + r);
  });
  if (bad)
    return std::nullopt;
  if (!out.isFloat())
    for (int64_t i = 0; i < out.numElements(); ++i) {
      int64_t o = i / (nIdx * inner), k = (i / inner) % nIdx, r = i % inner;
      int64_t j = idx.getInt(k);
      out.ints[i] = data.ints[(o * dim + (j < 0 ? j + dim : j)) * inner + r];
    }
  return out;
}

/// Same data, new shape.
SmallTensor reshaped(const SmallTensor &t, ArrayRef<int64_t> shape) {
  SmallTensor out = t;
  out.shape.assign(shape.begin(), shape.end());
  return out;
}

std::optional<SmallTensor> concat(const NodeProto &node, Inputs in) {
  int64_t rank = in[0]->shape.size();
  auto axis = graph::normalizeAxis(intAttr(node, "axis", 0), rank);
  if (!axis)
    return std::nullopt;
  SmallTensor out;
  out.dtype = in[0]->dtype;
  out.shape = in[0]->shape;
  out.shape[*axis] = 0;
  for (const SmallTensor *t : in) {
    if (int64_t(t->shape.size()) != rank || t->dtype != out.dtype)
      return std::nullopt;
    out.shape[*axis] += t->shape[*axis];
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < *axis; ++d)
    outer *= out.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (const SmallTensor *t : in) {
      int64_t chunk = outer ? t->numElements() / outer : 0;
      for (int64_t k = 0; k < chunk; ++k) {
        if (t->isFloat())
          out.floats.push_back(t->floats[o * chunk + k]);
        else
          out.ints.push_back(t->ints[o * chunk + k]);
      }
    }
  return out;
}

std::optional<SmallTensor> slice(const NodeProto &node, Inputs in,
                                 int64_t opset) {
  const SmallTensor &data = *in[0];
  int64_t rank = data.shape.size();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = intsAttr(node, "starts").value_or(SmallVector<int64_t>{});
    ends = intsAttr(node, "ends").value_or(SmallVector<int64_t>{});
    if (auto a = intsAttr(node, "axes"))
      axes = *a;
  } else {
    if (in.size() < 3 || !in[1] || !in[2])
      return std::nullopt;
    starts.assign(in[1]->ints.begin(), in[1]->ints.end());
    ends.assign(in[2]->ints.begin(), in[2]->ints.end());
    if (in.size() > 3 && in[3])
      axes.assign(in[3]->ints.begin(), in[3]->ints.end());
    if (in.size() > 4 && in[4])
      steps.assign(in[4]->ints.begin(), in[4]->ints.end());
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return std::nullopt;
  SmallVector<int64_t> begin(rank, 0), step(rank, 1), shape(data.shape);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = graph::normalizeAxis(axes[i], rank);
    if (!axis || steps[i] == 0)
      return std::nullopt;
    int64_t dim = data.shape[*axis], s = starts[i], e = ends[i];
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      shape[*axis] = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      shape[*axis] = s > e ? (s - e - steps[i] - 1) / -steps[i] : 0;
    }
    begin[*axis] = s;
    step[*axis] = steps[i];
  }
  SmallVector<int64_t> os = strides(shape), is = strides(data.shape);
  auto source = [&](int64_t i) {
    int64_t idx = 0;
    for (int64_t d = 0; d < rank; ++d)
      idx += (begin[d] + ((i / os[d]) % shape[d]) * step[d]) * is[d];
    return idx;
  };
  SmallTensor out;
  out.dtype = data.dtype;
  out.shape = shape;
  for (int64_t i = 0, n = out.numElements(); i < n; ++i) {
    if (data.isFloat())
      out.floats.push_back(data.floats[source(i)]);
    else
      out.ints.push_back(data.ints[source(i)]);
  }
  return out;
}

std::optional<SmallTensor> cast(const NodeProto &node, const SmallTensor &in) {
  int32_t to = int32_t(intAttr(node, "to", 0));
  if (!isFoldableType(to))
    return std::nullopt;
  SmallTensor out;
  out.dtype = to;
  out.shape = in.shape;
  for (int64_t i = 0, n = in.numElements(); i < n; ++i) {
    if (out.isFloat())
      out.floats.push_back(in.getDouble(i));
    else if (to == TensorProto::BOOL)
      out.ints.push_back(in.getDouble(i) != 0);
    else
      out.ints.push_back(in.isFloat() ? toInt64(in.floats[i]) : in.ints[i]);
  }
  return out;
}

/// Axes of Unsqueeze/Squeeze: an attribute before opset 13, an input after.
std::optional<SmallVector<int64_t>> axesOf(const NodeProto &node, Inputs in,
                                           int64_t opset) {
  if (opset < 13)
    return intsAttr(node, "axes");
  if (in.size() > 1 && in[1])
    return SmallVector<int64_t>(in[1]->ints.begin(), in[1]->ints.end());
  return std::nullopt;
}

} // namespace

/// Evaluates `node` on constant inputs (a null entry is an absent or
/// non-constant input); `shapes` supplies static shapes for Shape/Size.
static std::optional<SmallTensor> evaluate(const NodeProto &node, Inputs in,
                                           const ShapeMap &shapes,
                                           int64_t opset) {
  StringRef op = node.op_type();
  if (op == "Shape" || op == "Size") {
    auto it = shapes.find(node.input(0));
    if (it == shapes.end())
      return std::nullopt;
    ArrayRef<int64_t> shape = it->second;
    if (op == "Size") {
      std::optional<int64_t> n = graph::numElements(shape);
      if (!n)
        return std::nullopt;
      return build(TensorProto::INT64, {}, [&](int64_t) { return double(*n); });
    }
    int64_t rank = shape.size();
    int64_t start = intAttr(node, "start", 0), end = intAttr(node, "end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    SmallTensor out;
    out.dtype = TensorProto::INT64;
    out.shape = {std::max<int64_t>(end - start, 0)};
    out.ints.assign(shape.begin() + start,
                    shape.begin() + std::max(start, end));
    return out;
  }
  // Every other foldable op needs its first input constant.
  if (in.empty() || !in[0])
    return std::nullopt;
  if (op == "Identity")
    return *in[0];
  if (op == "Cast")
    return cast(node, *in[0]);
  if (op == "Gather")
    return in.size() > 1 && in[1] ? gather(node, in) : std::nullopt;
  if (op == "Concat") {
    if (llvm::is_contained(in, nullptr))
      return std::nullopt;
    return concat(node, in);
  }
  if (op == "Slice")
    return slice(node, in, opset);
  if (op == "Unsqueeze") {
    auto axes = axesOf(node, in, opset);
    if (!axes)
      return std::nullopt;
    int64_t rank = in[0]->shape.size() + axes->size();
    SmallVector<bool> inserted(rank, false);
    for (int64_t a : *axes) {
      auto axis = graph::normalizeAxis(a, rank);
      if (!axis)
        return std::nullopt;
      inserted[*axis] = true;
    }
    SmallVector<int64_t> shape;
    size_t k = 0;
    for (int64_t d = 0; d < rank; ++d)
      shape.push_back(inserted[d] ? 1 : in[0]->shape[k++]);
    return reshaped(*in[0], shape);
  }
  if (op == "Squeeze") {
    auto axes = axesOf(node, in, opset);
    int64_t rank = in[0]->shape.size();
    SmallVector<bool> removed(rank, false);
    if (axes) {
      for (int64_t a : *axes) {
        auto axis = graph::normalizeAxis(a, rank);
        if (!axis)
          return std::nullopt;
        removed[*axis] = true;
      }
    } else {
      for (int64_t d = 0; d < rank; ++d)
        removed[d] = in[0]->shape[d] == 1;
    }
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d)
      if (!removed[d])
        shape.push_back(in[0]->shape[d]);
    return reshaped(*in[0], shape);
  }
  if (op == "Reshape") {
    if (in.size() < 2 || !in[1])
      return std::nullopt;
    SmallVector<int64_t> shape(in[1]->ints.begin(), in[1]->ints.end());
    int64_t known = 1, inferAt = -1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0 && d < in[0]->shape.size())
        shape[d] = in[0]->shape[d];
      if (shape[d] == -1) {
        inferAt = d;
      } else {
        std::optional<int64_t> product = llvm::checkedMul(known, shape[d]);
        if (!product)
          return std::nullopt;
        known = *product;
      }
    }
    if (inferAt >= 0 && known > 0)
      shape[inferAt] = in[0]->numElements() / known;
    if (reshaped(*in[0], shape).numElements() != in[0]->numElements())
      return std::nullopt;
    return reshaped(*in[0], shape);
  }
  if (op == "Range") {
    if (in.size() < 3 || !in[1] || !in[2])
      return std::nullopt;
    double start = in[0]->getDouble(0), limit = in[1]->getDouble(0),
           delta = in[2]->getDouble(0);
    std::optional<int64_t> n = graph::rangeCount(start, limit, delta);
    if (!n || *n > kMaxInlineElements)
      return std::nullopt;
    return build(in[0]->dtype, {*n},
                 [&](int64_t i) { return start + double(i) * delta; });
  }
  if (op == "ConstantOfShape" || op == "Expand") {
    SmallVector<int64_t> shape;
    const SmallTensor *shapeTensor =
        op == "Expand" ? (in.size() > 1 ? in[1] : nullptr) : in[0];
    if (!shapeTensor)
      return std::nullopt;
    shape.assign(shapeTensor->ints.begin(), shapeTensor->ints.end());
    SmallTensor value;
    if (op == "Expand") {
      auto b = graph::broadcastShapes(in[0]->shape, shape);
      if (!b)
        return std::nullopt;
      shape = *b;
      value = *in[0];
    } else if (const auto *attr = findAttr(node, "value")) {
      auto v = readSmallTensor(attr->t());
      if (!v || v->numElements() != 1)
        return std::nullopt;
      value = *v;
      value.shape.clear();
    } else {
      value = build(TensorProto::FLOAT, {}, [](int64_t) { return 0.0; });
    }
    std::optional<int64_t> n = graph::numElements(shape);
    if (!n || *n > kMaxInlineElements)
      return std::nullopt;
    return build(value.dtype, shape, [&](int64_t i) {
      return value.getDouble(broadcastIndex(i, shape, value.shape));
    });
  }
  bool isUnary = isOneOf(op, {"Neg", "Abs", "Sqrt", "Floor", "Ceil", "Not"});
  bool isElementwise =
      isUnary || isOneOf(op, {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Max",
                              "Min", "Equal", "Less", "Greater", "LessOrEqual",
                              "GreaterOrEqual", "And", "Or", "Where"});
  if (!isElementwise || llvm::is_contained(in, nullptr))
    return std::nullopt;
  unsigned arity = op == "Where" ? 3 : isUnary ? 1 : 2;
  if (in.size() != arity)
    return std::nullopt;
  return elementwise(op, in);
}

/// Replaces every `If` whose condition is a known constant by the nodes of
/// the branch it selects (branch initializers become Constant nodes, each
/// branch output an Identity to the If's output). An If whose branch would
/// redefine a name of the graph stays. Returns how many were inlined.
static unsigned inlineConstantIfs(onnx::GraphProto &graph,
                                  const StringMap<SmallTensor> &consts) {
  StringSet<> defined;
  for (const auto &v : graph.input())
    defined.insert(v.name());
  for (const auto &v : graph.initializer())
    defined.insert(v.name());
  for (const NodeProto &node : graph.node())
    for (const std::string &out : node.output())
      defined.insert(out);
  onnx::GraphProto out;
  unsigned inlined = 0;
  for (NodeProto &node : *graph.mutable_node()) {
    auto cond = node.op_type() == "If" && node.input_size() == 1
                    ? consts.find(node.input(0))
                    : consts.end();
    const onnx::AttributeProto *branchAttr = nullptr;
    if (cond != consts.end() && cond->second.numElements() == 1)
      branchAttr = findAttr(node, cond->second.getDouble(0) != 0
                                      ? "then_branch"
                                      : "else_branch");
    const onnx::GraphProto *branch =
        branchAttr && branchAttr->has_g() ? &branchAttr->g() : nullptr;
    bool clash = !branch || branch->output_size() != node.output_size();
    for (int i = 0; branch && !clash && i < branch->initializer_size(); ++i)
      clash = defined.contains(branch->initializer(i).name());
    for (int i = 0; branch && !clash && i < branch->node_size(); ++i)
      for (const std::string &o : branch->node(i).output())
        clash |= defined.contains(o);
    if (clash) {
      *out.add_node() = std::move(node);
      continue;
    }
    for (const onnx::TensorProto &init : branch->initializer()) {
      NodeProto *c = out.add_node();
      c->set_op_type("Constant");
      c->set_name(node.name() + "/" + init.name());
      c->add_output(init.name());
      onnx::AttributeProto *a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      *a->mutable_t() = init;
    }
    for (const NodeProto &inner : branch->node())
      *out.add_node() = inner;
    for (int i = 0; i < node.output_size(); ++i) {
      if (node.output(i).empty())
        continue;
      NodeProto *id = out.add_node();
      id->set_op_type("Identity");
      id->set_name(node.name() + "/" + node.output(i));
      id->add_input(branch->output(i).name());
      id->add_output(node.output(i));
    }
    ++inlined;
  }
  // Every node was moved into `out`.
  graph.mutable_node()->Swap(out.mutable_node());
  return inlined;
}

unsigned foldConstants(onnx::GraphProto &graph, int64_t opset) {
  ShapeMap shapes = collectStaticShapes(graph);
  StringMap<SmallTensor> consts;
  // Float initializers are the model's weights. A float result computed from
  // one (Identity, Cast, arithmetic) stays an op, so that training updates
  // the weights: exporters deduplicate equal initializers behind Identity
  // nodes (each its own parameter, see translateIdentity), and a literal
  // would not be trained at all.
  StringSet<> weights;
  for (const auto &init : graph.initializer())
    if (auto t = readSmallTensor(init)) {
      if (t->isFloat())
        weights.insert(init.name());
      consts[init.name()] = std::move(*t);
    }
  unsigned folded = 0;
  for (NodeProto &node : *graph.mutable_node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      continue;
    if (node.op_type() == "Constant") {
      if (node.output_size() == 1)
        if (const auto *value = findAttr(node, "value"))
          if (auto t = readSmallTensor(value->t()))
            consts[node.output(0)] = std::move(*t);
      continue;
    }
    if (node.output_size() != 1)
      continue;
    SmallVector<const SmallTensor *> in;
    for (const std::string &name : node.input()) {
      auto it = consts.find(name);
      in.push_back(it == consts.end() ? nullptr : &it->second);
    }
    std::optional<SmallTensor> value = evaluate(node, in, shapes, opset);
    if (!value || value->numElements() > kMaxInlineElements)
      continue;
    if (value->isFloat() &&
        llvm::any_of(node.input(), [&](const std::string &name) {
          return weights.contains(name);
        }))
      continue;
    std::string output = node.output(0), name = node.name();
    node.Clear();
    node.set_op_type("Constant");
    node.set_name(name);
    node.add_output(output);
    onnx::AttributeProto *attr = node.add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    writeSmallTensor(*value, *attr->mutable_t());
    shapes[output] = value->shape;
    consts[output] = std::move(*value);
    ++folded;
  }
  return folded + inlineConstantIfs(graph, consts);
}

} // namespace import
} // namespace distopt
