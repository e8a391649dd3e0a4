//===- TranslateEinsum.cpp - ONNX Einsum as graph ops ----------*- C++ -*-===//
//
// Part of DistOpt. ONNX Einsum with its (constant) equation lowered into ops
// the graph dialect already has, so that its cost, kernels and gradient are
// theirs: a repeated label in one operand (a diagonal) is a
// graph.gather_elements at iota indices, a label that only one operand has
// and the result does not is a graph.reduce sum, two operands contract as
// one graph.matmul (batched over their shared kept labels) between
// graph.transpose and graph.reshape, and the result is permuted into the
// equation's order.
//
//===----------------------------------------------------------------------===//
#include "EinsumEquation.h"
#include "Translator.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace distopt::graph;
using onnx::NodeProto;

namespace distopt {
namespace import {

namespace {

/// An operand while the equation is lowered: its value and the label of
/// each of its dimensions.
struct Term {
  Value value;
  SmallVector<int> labels;
};

class EinsumLowering {
public:
  EinsumLowering(Translator &t, const NodeProto &node)
      : t(t), node(node), b(t.builder), loc(t.loc(node)),
        equation(Translator::attrString(node, "equation", "")) {}

  LogicalResult run();

private:
  Translator &t;
  const NodeProto &node;
  OpBuilder &b;
  Location loc;
  std::string equation;
  EinsumEquation eq;
  SmallVector<int> output;

  InFlightDiagnostic error() {
    return t.emitError(node) << "Einsum equation '" << equation << "': ";
  }
  Type elementType(Term &x) {
    return cast<RankedTensorType>(x.value.getType()).getElementType();
  }
  SmallVector<int64_t> shapeOf(ArrayRef<int> labels) {
    std::vector<int64_t> shape = eq.shapeOf(labels);
    return SmallVector<int64_t>(shape.begin(), shape.end());
  }
  RankedTensorType typeOf(ArrayRef<int64_t> shape, Type et) {
    return RankedTensorType::get(shape, et);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getShape() == shape)
      return v;
    return ReshapeOp::create(b, loc, typeOf(shape, type.getElementType()), v);
  }
  /// Permutes `x`'s dimensions into the label order `order`.
  void permute(Term &x, ArrayRef<int> order);
  /// Takes the diagonal of every label `x` has twice.
  void diagonals(Term &x);
  /// Sums the labels of `x` that `needed` does not hold.
  void sumUnneeded(Term &x, const llvm::DenseSet<int> &needed);
  /// `x` and `y` as one term whose labels are those `needed` holds.
  Term contract(Term &x, Term &y, const llvm::DenseSet<int> &needed);
};

} // namespace

void EinsumLowering::permute(Term &x, ArrayRef<int> order) {
  if (ArrayRef<int>(x.labels) == order)
    return;
  SmallVector<int64_t> perm;
  for (int l : order)
    perm.push_back(llvm::find(x.labels, l) - x.labels.begin());
  x.value = TransposeOp::create(b, loc, typeOf(shapeOf(order), elementType(x)),
                                x.value, b.getDenseI64ArrayAttr(perm));
  x.labels.assign(order.begin(), order.end());
}

void EinsumLowering::diagonals(Term &x) {
  for (;;) {
    // The first label that comes twice.
    int twice = -1;
    for (size_t i = 0; i < x.labels.size() && twice < 0; ++i)
      if (llvm::count(x.labels, x.labels[i]) > 1)
        twice = x.labels[i];
    if (twice < 0)
      return;
    // Move both to the end: [others..., n, n].
    SmallVector<int> order;
    for (int l : x.labels)
      if (l != twice)
        order.push_back(l);
    size_t others = order.size();
    for (size_t k = 0, n = x.labels.size() - others; k < n; ++k)
      order.push_back(twice);
    // A label three or more times: take the diagonal of the last two
    // first; the loop takes the rest.
    SmallVector<int64_t> perm;
    llvm::SmallVector<bool> used(x.labels.size(), false);
    for (int l : order) {
      size_t j = 0;
      while (x.labels[j] != l || used[j])
        ++j;
      used[j] = true;
      perm.push_back(j);
    }
    Type et = elementType(x);
    int64_t n = eq.sizes.at(twice);
    SmallVector<int64_t> shape = shapeOf(order);
    Value v = x.value;
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      v = TransposeOp::create(b, loc, typeOf(shape, et), v,
                              b.getDenseI64ArrayAttr(perm));
    // x[..., i, i] is gather_elements along the last axis at index i of
    // the second to last: indices [..., n, 1] holding i.
    SmallVector<int64_t> idxShape(shape.begin(), shape.end() - 1);
    idxShape.push_back(1);
    SmallVector<int64_t> line(idxShape.size(), 1);
    line[line.size() - 2] = n;
    Type i64 = b.getI64Type();
    Value idx = IotaOp::create(b, loc, typeOf({n}, i64), b.getI64IntegerAttr(0),
                               b.getI64IntegerAttr(1));
    idx = reshape(idx, line);
    if (idxShape != line)
      idx = ExpandOp::create(b, loc, typeOf(idxShape, i64), idx);
    v = GatherElementsOp::create(
        b, loc, typeOf(idxShape, et), v, idx,
        b.getI64IntegerAttr((int64_t)shape.size() - 1));
    order.pop_back();
    x.labels = order;
    x.value = reshape(v, shapeOf(order));
  }
}

void EinsumLowering::sumUnneeded(Term &x, const llvm::DenseSet<int> &needed) {
  SmallVector<int64_t> axes;
  SmallVector<int> kept;
  for (auto [k, l] : llvm::enumerate(x.labels)) {
    if (needed.contains(l))
      kept.push_back(l);
    else
      axes.push_back(k);
  }
  if (axes.empty())
    return;
  x.value = ReduceOp::create(
      b, loc, typeOf(shapeOf(kept), elementType(x)),
      ReduceKindAttr::get(b.getContext(), ReduceKind::Sum), x.value,
      b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false), b.getBoolAttr(false));
  x.labels = kept;
}

Term EinsumLowering::contract(Term &x, Term &y,
                              const llvm::DenseSet<int> &needed) {
  SmallVector<int> batch, contracted, xOnly, yOnly;
  for (int l : x.labels) {
    if (!llvm::is_contained(y.labels, l))
      xOnly.push_back(l);
    else if (needed.contains(l))
      batch.push_back(l);
    else
      contracted.push_back(l);
  }
  for (int l : y.labels)
    if (!llvm::is_contained(x.labels, l))
      yOnly.push_back(l);
  auto product = [&](ArrayRef<int> labels) {
    int64_t p = 1;
    for (int l : labels)
      p *= eq.sizes.at(l);
    return p;
  };
  int64_t B = product(batch), M = product(xOnly), K = product(contracted),
          N = product(yOnly);
  Type et = elementType(x);
  Term out;
  out.labels = llvm::to_vector(llvm::concat<int>(batch, xOnly, yOnly));
  if (!(et.isF32() || et.isF16() || et.isBF16())) {
    // graph.matmul computes in these types only: others (f64, integers)
    // multiply with broadcasting over [batch, xOnly, yOnly, contracted]
    // and sum the contracted labels.
    permute(x, llvm::to_vector(llvm::concat<int>(batch, xOnly, contracted)));
    permute(y, llvm::to_vector(llvm::concat<int>(batch, yOnly, contracted)));
    auto ones = [](size_t n) { return SmallVector<int64_t>(n, 1); };
    SmallVector<int64_t> xs = llvm::to_vector(
        llvm::concat<int64_t>(shapeOf(batch), shapeOf(xOnly),
                              ones(yOnly.size()), shapeOf(contracted)));
    SmallVector<int64_t> ys = llvm::to_vector(
        llvm::concat<int64_t>(shapeOf(batch), ones(xOnly.size()),
                              shapeOf(yOnly), shapeOf(contracted)));
    SmallVector<int> all =
        llvm::to_vector(llvm::concat<int>(batch, xOnly, yOnly, contracted));
    Term p;
    p.labels = all;
    p.value =
        BinaryOp::create(b, loc, typeOf(shapeOf(all), et), BinaryKind::Mul,
                         reshape(x.value, xs), reshape(y.value, ys), false);
    sumUnneeded(p, llvm::DenseSet<int>(out.labels.begin(), out.labels.end()));
    return p;
  }
  permute(x, llvm::to_vector(llvm::concat<int>(batch, xOnly, contracted)));
  permute(y, llvm::to_vector(llvm::concat<int>(batch, contracted, yOnly)));
  bool batched = !batch.empty();
  auto dims = [&](int64_t r, int64_t c) {
    return batched ? SmallVector<int64_t>{B, r, c} : SmallVector<int64_t>{r, c};
  };
  Value lhs = reshape(x.value, dims(M, K)), rhs = reshape(y.value, dims(K, N));
  Value p = MatmulOp::create(b, loc, typeOf(dims(M, N), et), lhs, rhs, Value(),
                             b.getBoolAttr(false), b.getBoolAttr(false),
                             b.getF64FloatAttr(1.0), b.getF64FloatAttr(1.0));
  out.value = reshape(p, shapeOf(out.labels));
  return out;
}

LogicalResult EinsumLowering::run() {
  SmallVector<Term> terms;
  std::vector<std::vector<int64_t>> shapes;
  for (int i = 0; i < node.input_size(); ++i) {
    Value v = t.operand(node, i);
    if (!v)
      return failure();
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    shapes.emplace_back(shape.begin(), shape.end());
    terms.push_back({v, {}});
  }
  std::string message;
  if (!eq.parse(equation, shapes, message))
    return error() << message;
  for (auto [x, labels] : llvm::zip(terms, eq.inputs))
    x.labels.assign(labels.begin(), labels.end());
  output.assign(eq.output.begin(), eq.output.end());
  // ONNX 1.12 infers Einsum's rank only; ShapeInference.cpp completes its
  // shape with the same parse, so an inferred type agrees unless the
  // model declares another.
  SmallVector<int64_t> shape = shapeOf(output);
  if (RankedTensorType inferred = t.inferredType(node.output(0));
      inferred && inferred.getShape() != ArrayRef<int64_t>(shape))
    return error() << "it gives shape " << shapeToString(shape)
                   << " but the model declares "
                   << shapeToString(inferred.getShape());
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(terms[0].value.getType()).getElementType());
  if (!tensorBytes(type))
    return error() << "its result has shape " << shapeToString(shape)
                   << ", whose size in bytes does not fit in int64; fix the "
                      "model";

  // Broadcast ellipsis dimensions of size 1 to the common size.
  for (Term &x : terms) {
    SmallVector<int64_t> full = shapeOf(x.labels);
    auto xt = cast<RankedTensorType>(x.value.getType());
    if (xt.getShape() != ArrayRef<int64_t>(full))
      x.value =
          ExpandOp::create(b, loc, typeOf(full, xt.getElementType()), x.value);
    diagonals(x);
  }
  // Labels needed after term k: the output's and those of later terms.
  auto neededAfter = [&](size_t k, size_t skip) {
    llvm::DenseSet<int> needed(output.begin(), output.end());
    for (size_t j = 0; j < terms.size(); ++j)
      if (j != skip && j >= k)
        needed.insert(terms[j].labels.begin(), terms[j].labels.end());
    return needed;
  };
  for (size_t k = 0; k < terms.size(); ++k) {
    llvm::DenseSet<int> needed = neededAfter(0, k);
    sumUnneeded(terms[k], needed);
  }
  Term acc = terms[0];
  for (size_t k = 1; k < terms.size(); ++k) {
    llvm::DenseSet<int> needed = neededAfter(k + 1, terms.size());
    acc = contract(acc, terms[k], needed);
  }
  sumUnneeded(acc, llvm::DenseSet<int>(output.begin(), output.end()));
  permute(acc, output);
  return t.setResult(node, reshape(acc.value, type.getShape()));
}

LogicalResult translateEinsum(Translator &t, const NodeProto &node) {
  if (!Translator::attr(node, "equation"))
    return t.emitError(node) << "Einsum has no 'equation' attribute; fix the "
                                "model";
  return EinsumLowering(t, node).run();
}

} // namespace import
} // namespace distopt
