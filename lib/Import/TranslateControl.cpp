//===- TranslateControl.cpp - If with a run-time condition ------*- C++ -*-===//
//
// Part of DistOpt. An ONNX If whose condition constant folding could not
// decide (ConstantFolding.cpp keeps the branch of a decided one) becomes
// `graph.opaque "If"` when both branches give every output the same static
// shape: its operands are the condition and then the outer values the
// branches read, so the plan orders it after them and keeps them alive.
// Branches that disagree are an error naming both shapes.
//
//===----------------------------------------------------------------------===//
#include "Translator.h"

#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;
using onnx::GraphProto;
using onnx::NodeProto;

namespace distopt {
namespace import {

/// Adds to `captured`, in order of first use, the names `graph` (and the
/// subgraphs of its nodes) reads without defining them.
static void collectCaptures(const GraphProto &graph,
                            llvm::SetVector<StringRef> &captured) {
  llvm::StringSet<> local;
  for (const auto &v : graph.input())
    local.insert(v.name());
  for (const auto &init : graph.initializer())
    local.insert(init.name());
  auto use = [&](StringRef name) {
    if (!name.empty() && !local.contains(name))
      captured.insert(name);
  };
  for (const NodeProto &node : graph.node()) {
    for (const auto &in : node.input())
      use(in);
    for (const auto &a : node.attribute()) {
      llvm::SetVector<StringRef> inner;
      if (a.has_g())
        collectCaptures(a.g(), inner);
      for (const auto &g : a.graphs())
        collectCaptures(g, inner);
      for (const auto &name : inner)
        use(name);
    }
    for (const auto &out : node.output())
      local.insert(out);
  }
  for (const auto &v : graph.output())
    use(v.name());
}

/// The shape of output `index` of a branch as text ("?" for an unknown
/// dimension); none when the output has no tensor shape (a sequence, a
/// branch inference could not type).
static std::optional<std::string> branchShape(const GraphProto &branch,
                                              int index) {
  if (index >= branch.output_size())
    return std::nullopt;
  const auto &type = branch.output(index).type();
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return std::nullopt;
  std::string s;
  for (const auto &dim : type.tensor_type().shape().dim())
    s += (s.empty() ? "" : "x") + (dim.has_dim_value()
                                       ? std::to_string(dim.dim_value())
                                       : std::string("?"));
  return s.empty() ? "scalar" : s;
}

static LogicalResult translateIf(Translator &t, const NodeProto &node) {
  const auto *thenAttr = Translator::attr(node, "then_branch");
  const auto *elseAttr = Translator::attr(node, "else_branch");
  if (!thenAttr || !elseAttr || !thenAttr->has_g() || !elseAttr->has_g()) {
    t.emitError(node) << "node '" << node.name()
                      << "' (If) needs the graph attributes then_branch and "
                         "else_branch; fix the exporter or the model";
    return failure();
  }
  const GraphProto &thenG = thenAttr->g(), &elseG = elseAttr->g();
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty() || t.inferredType(node.output(i)))
      continue;
    std::optional<std::string> a = branchShape(thenG, i),
                               b = branchShape(elseG, i);
    // Without a tensor shape on each side there is nothing to compare: the
    // generic error (emitOpaque's) says the shape cannot be inferred.
    if (!a || !b)
      return t.emitOpaque(node);
    auto diag = t.emitError(node);
    diag << "node '" << node.name() << "' (If) decides its branch at run time "
         << "and output " << i << " ('" << node.output(i) << "') has shape "
         << *a << " in then_branch but " << *b
         << " in else_branch; a plan needs one static shape: ";
    if (!t.scalarInputNames().empty())
      diag << "give the scalar inputs the condition depends on their value "
              "with --input-value=NAME:VALUE (scalar inputs: "
           << t.scalarInputNames() << "), which keeps one branch, or ";
    diag << "export the model with the branch you run";
    return failure();
  }
  llvm::SetVector<StringRef> captured;
  collectCaptures(thenG, captured);
  collectCaptures(elseG, captured);
  SmallVector<Value> reads;
  for (StringRef name : captured) {
    Value v = t.lookup(name);
    if (!v) {
      t.emitError(node) << "value '" << name << "' read by a branch of node '"
                        << node.name()
                        << "' (If) is not defined before it; fix the model";
      return failure();
    }
    reads.push_back(v);
  }
  return t.emitOpaque(node, reads);
}

void registerControlTranslations(TranslateTable &table) {
  table["If"] = translateIf;
}

} // namespace import
} // namespace distopt
