//===- TranslateControl.cpp - If with a run-time condition ------*- C++ -*-===//
//
// Part of DistOpt. An ONNX If whose condition constant folding could not
// decide (ConstantFolding.cpp keeps the branch of a decided one) becomes
// `graph.opaque "If"` when both branches give every output the same static
// shape: its operands are the condition and then the outer values the
// branches read, so the plan orders it after them and keeps them alive.
// Branches that disagree are an error naming both shapes.
//
// Each branch's body is translated too, into a private function of the
// nested module `@if_branches` (out of the way of the passes that take the
// top-level functions as the program), and the op's `then_branch` /
// `else_branch` attributes name them: the cost model prices the If as its
// more expensive branch with the same rules as the rest of the graph
// (GraphCost.cpp). A branch the importer cannot translate leaves its
// attribute out, with a remark, and the If is priced like any unknown op.
//
//===----------------------------------------------------------------------===//
#include "Translator.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
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

/// The nested module that holds the branch functions of the module `t`
/// builds into, created at its end on first use.
static ModuleOp branchModule(Translator &t) {
  auto top =
      t.builder.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  // An If inside a branch puts its branches next to that branch.
  if (top.getSymName() == "if_branches")
    return top;
  if (auto existing = top.lookupSymbol<ModuleOp>("if_branches"))
    return existing;
  OpBuilder::InsertionGuard guard(t.builder);
  t.builder.setInsertionPointToEnd(top.getBody());
  return ModuleOp::create(t.builder, top.getLoc(), StringRef("if_branches"));
}

/// Translates `branch` (attribute `which` of the If `node`) into a private
/// function of the branch module whose arguments are the outer values it
/// reads and whose results are its outputs; returns the symbol naming it,
/// or null with a remark when a node of the branch does not translate (its
/// error is the remark's reason: the If itself still imports).
static SymbolRefAttr translateBranch(Translator &t, const NodeProto &node,
                                     StringRef which,
                                     const GraphProto &branch) {
  OpBuilder &b = t.builder;
  OpBuilder::InsertionGuard guard(b);
  Operation *ifParent = b.getInsertionBlock()->getParentOp();
  ModuleOp holder = branchModule(t);
  llvm::SetVector<StringRef> captured;
  collectCaptures(branch, captured);

  std::string reason;
  {
    // The branch's errors become the reason of one remark below.
    ScopedDiagnosticHandler keep(b.getContext(), [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return success();
      if (reason.empty())
        reason = diag.str();
      return success();
    });
    Translator inner(b, t.file(), t.opset, branch);
    SmallVector<Type> argTypes;
    SmallVector<StringRef> argNames;
    for (StringRef name : captured) {
      if (const SmallTensor *c = t.constant(name)) {
        inner.defineConstant(name, *c);
        continue;
      }
      Value v = t.lookup(name);
      if (!v)
        return {}; // translateIf reports the undefined value.
      argTypes.push_back(v.getType());
      argNames.push_back(name);
    }
    std::string base = (node.name().empty() ? node.output(0) : node.name()) +
                       "." + which.str();
    b.setInsertionPointToEnd(holder.getBody());
    auto func = func::FuncOp::create(b, t.loc(node), base,
                                     b.getFunctionType(argTypes, {}));
    func.setPrivate();
    Block *body = func.addEntryBlock();
    for (auto [i, name] : llvm::enumerate(argNames)) {
      func.setArgAttr(i, "graph.name", b.getStringAttr(name));
      inner.define(name, body->getArgument(i));
    }
    b.setInsertionPointToStart(body);
    bool ok = branch.initializer_size() == 0;
    if (!ok)
      reason = "it has initializers of its own";
    for (const NodeProto &n : branch.node()) {
      if (!ok)
        break;
      ok = succeeded(translateNode(inner, n));
    }
    SmallVector<Value> results;
    for (const auto &out : branch.output()) {
      if (!ok)
        break;
      Value v = inner.lookup(out.name());
      if (!v) {
        reason = "output '" + out.name() + "' is computed by no node";
        ok = false;
      }
      results.push_back(v);
    }
    if (ok) {
      func::ReturnOp::create(b, t.loc(node), results);
      func.setFunctionType(b.getFunctionType(argTypes, ValueRange(results)));
      SymbolTable(holder).insert(func); // unique name
      // Named from the If's own module: the top one, or the branch module
      // itself for an If inside a branch.
      bool inside = holder->isProperAncestor(ifParent);
      if (succeeded(mlir::verify(func)))
        return inside ? SymbolRefAttr(
                            FlatSymbolRefAttr::get(func.getSymNameAttr()))
                      : SymbolRefAttr::get(
                            holder.getSymNameAttr(),
                            {FlatSymbolRefAttr::get(func.getSymNameAttr())});
      if (reason.empty())
        reason = "its translation does not verify";
    }
    func.erase();
  }
  emitRemark(t.loc(node)) << "node '" << node.name() << "' (If): " << which
                          << " is not costed (" << reason
                          << "), so the plan prices the If like an unknown "
                             "op: one FLOP per output element";
  return {};
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
  SymbolRefAttr thenRef = translateBranch(t, node, "then_branch", thenG);
  SymbolRefAttr elseRef = translateBranch(t, node, "else_branch", elseG);
  if (failed(t.emitOpaque(node, reads)))
    return failure();
  // The graph attributes become the branch functions' symbols (none for a
  // branch that did not translate).
  auto op = t.lookup(node.output(0)).getDefiningOp<graph::OpaqueOp>();
  NamedAttrList attrs(op.getAttrsAttr());
  attrs.erase("then_branch");
  attrs.erase("else_branch");
  if (thenRef)
    attrs.set("then_branch", thenRef);
  if (elseRef)
    attrs.set("else_branch", elseRef);
  op.setAttrsAttr(attrs.getDictionary(t.builder.getContext()));
  return success();
}

void registerControlTranslations(TranslateTable &table) {
  table["If"] = translateIf;
}

} // namespace import
} // namespace distopt
