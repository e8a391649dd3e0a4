//===- TranslateEinsum.cpp - ONNX Einsum as graph ops ------------*- C++
//-*-===//
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
#include "Translator.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace distopt::graph;
using onnx::NodeProto;

namespace distopt {
namespace import {

namespace {

/// A label: a letter's character code, or kEllipsis + k for dimension k of
/// the broadcast ellipsis (right-aligned across the operands).
constexpr int kEllipsis = 1000;

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
  llvm::DenseMap<int, int64_t> sizes;
  SmallVector<int> output;
  /// Dimensions of the broadcast ellipsis (the most any operand's has).
  int64_t maxEllipsis = 0;

  InFlightDiagnostic error() {
    return t.emitError(node) << "Einsum equation '" << equation << "': ";
  }
  /// The labels of one side of the equation; `rank` is the operand's rank
  /// (-1 for the output, whose ellipsis has `ellipsis` dimensions).
  FailureOr<SmallVector<int>> parseTerm(StringRef term, int64_t rank,
                                        int64_t ellipsis, StringRef what);
  Type elementType(Term &x) {
    return cast<RankedTensorType>(x.value.getType()).getElementType();
  }
  SmallVector<int64_t> shapeOf(ArrayRef<int> labels) {
    SmallVector<int64_t> shape;
    for (int l : labels)
      shape.push_back(sizes.lookup(l));
    return shape;
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

FailureOr<SmallVector<int>> EinsumLowering::parseTerm(StringRef term,
                                                      int64_t rank,
                                                      int64_t ellipsis,
                                                      StringRef what) {
  SmallVector<int> labels;
  size_t dots = term.find("...");
  if (term.count("...") > 1 ||
      (dots == StringRef::npos && term.contains('.')) ||
      (dots != StringRef::npos && (term.take_front(dots).contains('.') ||
                                   term.drop_front(dots + 3).contains('.')))) {
    error() << what << " '" << term
            << "' has a '.' outside one '...'; an ellipsis is written '...' "
               "at most once a term";
    return failure();
  }
  int64_t letters = (int64_t)term.size() - (dots == StringRef::npos ? 0 : 3);
  for (char c : term)
    if (c != '.' && !llvm::isAlpha(c)) {
      error() << what << " '" << term << "' has the character '" << c
              << "'; labels are letters a-z and A-Z";
      return failure();
    }
  if (rank >= 0) {
    if (dots == StringRef::npos ? letters != rank : letters > rank) {
      error() << what << " '" << term << "' names " << letters
              << " dimension(s) but the input has rank " << rank
              << "; give one label per dimension (or '...' for the rest)";
      return failure();
    }
    ellipsis = rank - letters;
  }
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      // Right-aligned: an operand with fewer ellipsis dimensions has the
      // last ones.
      for (int64_t k = 0; k < ellipsis; ++k)
        labels.push_back(kEllipsis + (int)(maxEllipsis - ellipsis + k));
      i += 2;
      continue;
    }
    labels.push_back((unsigned char)term[i]);
  }
  return labels;
}

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
    int64_t n = sizes.lookup(twice);
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
      p *= sizes.lookup(l);
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
  RankedTensorType type = t.resultType(node, 0);
  if (!type)
    return failure();
  SmallVector<Term> terms;
  for (int i = 0; i < node.input_size(); ++i) {
    Value v = t.operand(node, i);
    if (!v)
      return failure();
    terms.push_back({v, {}});
  }
  std::string eq;
  for (char c : equation)
    if (!llvm::isSpace(c))
      eq += c;
  StringRef lhs = eq, rhs;
  bool explicitOutput = false;
  if (size_t arrow = lhs.find("->"); arrow != StringRef::npos) {
    rhs = lhs.drop_front(arrow + 2);
    lhs = lhs.take_front(arrow);
    explicitOutput = true;
  }
  SmallVector<StringRef> inputs;
  lhs.split(inputs, ',');
  if (inputs.size() != terms.size())
    return error() << "it has " << inputs.size() << " input term(s) but the "
                   << "node has " << terms.size()
                   << " input(s); give one term per input";
  // The broadcast ellipsis has as many dimensions as the longest.
  for (auto [term, x] : llvm::zip(inputs, terms)) {
    int64_t rank = cast<RankedTensorType>(x.value.getType()).getRank();
    int64_t letters =
        llvm::count_if(term, [](char c) { return llvm::isAlpha(c); });
    if (term.contains("...") && rank > letters)
      maxEllipsis = std::max(maxEllipsis, rank - letters);
  }
  for (auto [k, term, x] : llvm::enumerate(inputs, terms)) {
    auto rank = cast<RankedTensorType>(x.value.getType()).getRank();
    auto labels = parseTerm(term, rank, 0, "input term " + std::to_string(k));
    if (failed(labels))
      return failure();
    x.labels = *labels;
    auto shape = cast<RankedTensorType>(x.value.getType()).getShape();
    for (auto [l, d] : llvm::zip(x.labels, shape)) {
      auto [it, fresh] = sizes.try_emplace(l, d);
      if (fresh || it->second == d)
        continue;
      // Ellipsis dimensions broadcast; letters must agree.
      if (l >= kEllipsis && (it->second == 1 || d == 1)) {
        it->second = std::max(it->second, d);
        continue;
      }
      return error() << "label '"
                     << (l >= kEllipsis ? std::string("...")
                                        : std::string(1, (char)l))
                     << "' has size " << d << " in input " << k << " but size "
                     << it->second
                     << " elsewhere in the inputs; each label has one size";
    }
  }
  if (explicitOutput) {
    auto labels = parseTerm(rhs, -1, maxEllipsis, "the output term");
    if (failed(labels))
      return failure();
    output = *labels;
    for (int l : output) {
      if (l < kEllipsis && !sizes.count(l))
        return error() << "the output has label '" << (char)l
                       << "', which no input has; an output label must be one "
                          "of the inputs'";
      if (llvm::count(output, l) > 1)
        return error() << "the output has label '" << (char)l
                       << "' twice; an output label comes once";
    }
    if (rhs.contains("...") == false)
      for (int64_t k = 0; k < maxEllipsis; ++k)
        if (sizes.lookup(kEllipsis + (int)k) != 1)
          return error() << "the inputs' '...' dimensions are not in the "
                            "output; write '...' in the output term";
  } else {
    // Implicit output: the ellipsis, then the letters used once, in
    // alphabetical (ASCII) order.
    for (int64_t k = 0; k < maxEllipsis; ++k)
      output.push_back(kEllipsis + (int)k);
    std::map<int, int> uses;
    for (Term &x : terms)
      for (int l : x.labels)
        if (l < kEllipsis)
          ++uses[l];
    for (auto [l, n] : uses)
      if (n == 1)
        output.push_back(l);
  }
  if (shapeOf(output) != type.getShape())
    return error() << "it gives shape " << shapeToString(shapeOf(output))
                   << " but ONNX shape inference gives "
                   << shapeToString(type.getShape());

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
