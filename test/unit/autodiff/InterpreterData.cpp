//===- InterpreterData.cpp - Reductions, slices, pads -----------*- C++ -*-===//
//
// Part of DistOpt. Written from the op descriptions in the graph dialect,
// not from the code generator, so the two can be checked against each
// other.
//
//===----------------------------------------------------------------------===//
#include "InterpreterData.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace distopt::testing;
namespace g = distopt::graph;

Tensor distopt::testing::reduceValue(g::ReduceOp op, const Tensor &x) {
  int64_t rank = x.shape.size();
  std::vector<bool> reduced(rank, op.getAxes().empty());
  for (int64_t a : op.getAxes())
    reduced[a < 0 ? a + rank : a] = true;
  Tensor y = zerosOf(cast<RankedTensorType>(op.getType()).getShape());
  // Gather each output's reduced elements, then apply the kind.
  std::vector<std::vector<double>> groups(y.size());
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> idx = unravelIndex(i, x.shape), out;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d])
        out.push_back(idx[d]);
      else if (op.getKeepdims())
        out.push_back(0);
    groups[ravelIndex(out, y.shape)].push_back(x.data[i]);
  }
  using K = g::ReduceKind;
  for (int64_t o = 0; o < y.size(); ++o) {
    const std::vector<double> &v = groups[o];
    double r = 0;
    switch (op.getKind()) {
    case K::Sum:
    case K::Mean:
    case K::LogSum:
      for (double e : v)
        r += e;
      if (op.getKind() == K::Mean)
        r /= v.size();
      if (op.getKind() == K::LogSum)
        r = std::log(r);
      break;
    case K::Max:
      r = *std::max_element(v.begin(), v.end());
      break;
    case K::Min:
      r = *std::min_element(v.begin(), v.end());
      break;
    case K::Prod:
      r = 1;
      for (double e : v)
        r *= e;
      break;
    case K::L1:
      for (double e : v)
        r += std::fabs(e);
      break;
    case K::L2:
    case K::SumSquare:
      for (double e : v)
        r += e * e;
      if (op.getKind() == K::L2)
        r = std::sqrt(r);
      break;
    case K::LogSumExp: {
      double m = *std::max_element(v.begin(), v.end());
      for (double e : v)
        r += std::exp(e - m);
      r = m + std::log(r);
      break;
    }
    case K::ArgMax:
    case K::ArgMin: {
      bool isMax = op.getKind() == K::ArgMax;
      int64_t at = 0;
      for (size_t k = 1; k < v.size(); ++k)
        if (isMax ? v[k] > v[at] : v[k] < v[at])
          at = k;
      r = at;
      break;
    }
    }
    y.data[o] = r;
  }
  return y;
}

Tensor distopt::testing::sliceValue(g::SliceOp op, const Tensor &x) {
  int64_t rank = x.shape.size();
  std::vector<int64_t> starts(rank, 0), steps(rank, 1);
  for (auto [k, axis] : llvm::enumerate(op.getAxes())) {
    int64_t a = axis < 0 ? axis + rank : axis, dim = x.shape[a];
    int64_t step = op.getSteps()[k], s = op.getStarts()[k];
    if (s < 0)
      s += dim;
    starts[a] = step > 0 ? std::clamp<int64_t>(s, 0, dim)
                         : std::clamp<int64_t>(s, -1, dim - 1);
    steps[a] = step;
  }
  Tensor y = zerosOf(cast<RankedTensorType>(op.getType()).getShape());
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> idx = unravelIndex(i, y.shape);
    for (int64_t d = 0; d < rank; ++d)
      idx[d] = starts[d] + idx[d] * steps[d];
    y.data[i] = x.data[ravelIndex(idx, x.shape)];
  }
  return y;
}

Tensor distopt::testing::concatValue(g::ConcatOp op,
                                     const std::vector<Tensor> &inputs) {
  Tensor y = zerosOf(cast<RankedTensorType>(op.getType()).getShape());
  int64_t rank = y.shape.size(), axis = op.getAxis();
  if (axis < 0)
    axis += rank;
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> idx = unravelIndex(i, y.shape);
    for (const Tensor &in : inputs) {
      if (idx[axis] < in.shape[axis]) {
        y.data[i] = in.data[ravelIndex(idx, in.shape)];
        break;
      }
      idx[axis] -= in.shape[axis];
    }
  }
  return y;
}

/// The source index of output index `j` (already shifted by the begin
/// pad) along a dimension of size `n`; -1 for a constant border.
static int64_t padSource(g::PadMode mode, int64_t j, int64_t n) {
  switch (mode) {
  case g::PadMode::Constant:
    return j >= 0 && j < n ? j : -1;
  case g::PadMode::Edge:
    return std::clamp<int64_t>(j, 0, n - 1);
  case g::PadMode::Reflect:
    // Mirror about the first and last element (NumPy's "reflect").
    while (j < 0 || j >= n)
      j = j < 0 ? -j : 2 * (n - 1) - j;
    return j;
  case g::PadMode::Wrap:
    return ((j % n) + n) % n;
  }
  return -1;
}

Tensor distopt::testing::padValue(g::PadOp op, const Tensor &x) {
  int64_t rank = x.shape.size();
  Tensor y = zerosOf(cast<RankedTensorType>(op.getType()).getShape());
  double value = op.getValue().convertToDouble();
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> idx = unravelIndex(i, y.shape);
    bool inside = true;
    for (int64_t d = 0; d < rank; ++d) {
      idx[d] = padSource(op.getMode(), idx[d] - op.getPads()[d], x.shape[d]);
      inside &= idx[d] >= 0;
    }
    y.data[i] = inside ? x.data[ravelIndex(idx, x.shape)] : value;
  }
  return y;
}
