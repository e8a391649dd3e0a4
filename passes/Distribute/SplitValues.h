//===- SplitValues.h - Values split over a group of ranks -------*- C++ -*-===//
//
// Part of DistOpt. What dist-tensor-parallel and dist-context-parallel
// share: how a value is split over the ranks of a group (a dimension,
// blocks), how a split follows a view, the rank's type, and the
// collectives that make a split value whole.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_DISTRIBUTE_SPLITVALUES_H
#define DISTOPT_PASSES_DISTRIBUTE_SPLITVALUES_H

#include "dialects/Dist/Balanced.h"
#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Schedule/RankLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <vector>

namespace distopt::split {

/// How a value is split over the ranks of a group: dimension `dim`,
/// viewed as [blocks][ranks][n / (blocks ranks)], each rank holding its
/// part of every block (a fused Q|K|V projection splits each of Q, K and
/// V, not the concatenation).
struct Split {
  int64_t dim = 0;
  int64_t blocks = 1;
  bool operator==(const Split &o) const {
    return dim == o.dim && blocks == o.blocks;
  }
};

inline mlir::RankedTensorType tensorOf(mlir::Value v) {
  return mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
}

/// `axis` of a value of rank `rank`, a negative one counted from the end
/// (exporters write the fused projection's split as axis -1).
inline int64_t dimOf(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The rank's part of `t` split `parts` ways by `s`.
inline mlir::RankedTensorType localType(mlir::RankedTensorType t, Split s,
                                        int64_t parts) {
  llvm::SmallVector<int64_t> shape(t.getShape());
  shape[s.dim] /= parts;
  return mlir::RankedTensorType::get(shape, t.getElementType(),
                                     t.getEncoding());
}

/// True when every dimension of `t` before `dim` is 1: a shard along `dim`
/// is then a run of the flattened elements, which the runtime's
/// reduce-scatter, all-gather and all-slice move.
inline bool contiguousAlong(mlir::RankedTensorType t, int64_t dim) {
  return llvm::all_of(t.getShape().take_front(dim),
                      [](int64_t d) { return d == 1; });
}

/// `s` (over `parts` ranks) carried through a reshape from `in` to `out`:
/// the split dimension kept whole, cut into factors (the split on the
/// outer one) or merged with the dimensions after it (the split
/// outermost).
inline std::optional<Split> reshaped(mlir::Value in, mlir::Value out, Split s,
                                     int64_t parts) {
  llvm::ArrayRef<int64_t> a = tensorOf(in).getShape(),
                          b = tensorOf(out).getShape();
  int64_t pre = 1;
  for (int64_t i = 0; i < s.dim; ++i)
    pre *= a[i];
  int64_t n = a[s.dim];
  int64_t acc = 1, j = 0;
  while (j < (int64_t)b.size() && acc < pre)
    acc *= b[j++];
  // Leading unit dimensions of the result come before the split one.
  while (j < (int64_t)b.size() && acc == pre && b[j] == 1 && n != 1)
    ++j;
  if (acc != pre || j >= (int64_t)b.size())
    return std::nullopt;
  if (b[j] == n)
    return Split{j, s.blocks};
  if (s.blocks != 1)
    return std::nullopt;
  if (n % b[j] == 0) { // [.., n, ..] -> [.., f0, f1, ..]: split on f0
    int64_t p = 1;
    for (int64_t k = j; k < (int64_t)b.size() && p < n; ++k)
      p *= b[k];
    if (p == n && b[j] % parts == 0)
      return Split{j, 1};
    return std::nullopt;
  }
  if (b[j] % n == 0) { // [.., n, m, ..] -> [.., n m, ..]
    int64_t p = 1;
    for (int64_t k = s.dim; k < (int64_t)a.size() && p < b[j]; ++k)
      p *= a[k];
    if (p == b[j])
      return Split{j, 1};
  }
  return std::nullopt;
}

/// The blocks a column-parallel matmul's output splits into: k when its
/// output (through views, a bias or elementwise ops) is cut into k equal
/// pieces along its last dimension (a fused projection: GPT-2's Q, K and V,
/// a gated FFN's gate and up), else 1. dist-tensor-parallel splits each
/// block over the tensor ranks, so tp must divide the columns / k.
inline int64_t fusedBlocks(graph::MatmulOp m) {
  mlir::Value v = m.getResult();
  int64_t dim = tensorOf(v).getRank() - 1;
  for (int hops = 0; hops < 8 && v.hasOneUse(); ++hops) {
    mlir::Operation *user = *v.getUsers().begin();
    if (auto s = llvm::dyn_cast<graph::SplitOp>(user)) {
      if (dimOf(s.getAxis(), tensorOf(v).getRank()) != dim)
        return 1;
      int64_t first = tensorOf(s.getResult(0)).getDimSize(dim);
      for (mlir::Value r : s.getResults())
        if (tensorOf(r).getDimSize(dim) != first)
          return 1;
      return s.getNumResults();
    }
    if (llvm::isa<graph::ReshapeOp>(user)) {
      // A split of several blocks passes a reshape only with its dimension
      // kept whole, whatever the ranks.
      std::optional<Split> next =
          reshaped(v, user->getResult(0), {dim, 2}, /*parts=*/1);
      if (!next)
        return 1;
      dim = next->dim;
    } else if (!llvm::isa<graph::BinaryOp, graph::UnaryOp>(user)) {
      return 1;
    }
    v = user->getResult(0);
  }
  return 1;
}

/// The pipeline stage that runs `op`: that of its `dist.virtual_stage`,
/// else stage 0.
inline unsigned stageOf(mlir::Operation *op,
                        const schedule::RankLayout &layout) {
  if (auto vs = dist::DistDialect::VirtualStageAttrHelper(op->getContext())
                    .getAttr(op))
    return layout.pipelineStage(vs.getInt());
  return 0;
}

/// Copies the placement attributes (layer, virtual stage) of `from`.
inline void placeLike(mlir::Operation *op, mlir::Operation *from) {
  for (llvm::StringRef name :
       {dist::DistDialect::LayerAttrHelper::getNameStr(),
        dist::DistDialect::VirtualStageAttrHelper::getNameStr()})
    if (mlir::Attribute a = from->getAttr(name))
      op->setAttr(name, a);
}

/// Creates the collective `Op` at `at`'s location over the first of
/// `groups`, run by every group's ranks (`dist.groups`: one program serves
/// every group, each rank takes the group that holds it).
template <typename Op, typename... Args>
Op createCollective(mlir::OpBuilder &b, mlir::Operation *at,
                    const std::vector<std::vector<unsigned>> &groups,
                    Args &&...args) {
  auto op = Op::create(b, at->getLoc(), std::forward<Args>(args)...,
                       dist::deviceGroup(b.getContext(), groups.front()));
  dist::setRunGroups(op, groups);
  return op;
}

/// `v`, split along `dim` over the ranks of `groups` (each holding its
/// part, of type `local`: `v` may still have its whole type while a pass
/// rewrites), gathered whole where `b` inserts, placed like `at`: along `dim`
/// when every dimension before it is 1, else along a new leading one,
/// moved next to `dim` and merged into it (the runtime gathers along the
/// leading dimension). `onGathered` sees the gathered stack first (the
/// value whose gradient dist-autodiff slices back). `balanced`: each rank
/// holds chunks c and 2 parts - 1 - c of the 2 parts chunks of `dim`
/// (context parallelism's load-balanced split): the gather is `balanced`,
/// and off the leading dimension the rank's two chunks are stacked along
/// the new leading one.
inline mlir::Value
gatherWhole(mlir::OpBuilder &b, mlir::Operation *at, mlir::Value v,
            mlir::RankedTensorType local, int64_t dim,
            const std::vector<std::vector<unsigned>> &groups,
            llvm::function_ref<mlir::Value(mlir::Value)> onGathered = {},
            bool balanced = false) {
  int64_t parts = groups.front().size();
  mlir::Location loc = v.getLoc();
  llvm::SmallVector<int64_t> whole(local.getShape());
  whole[dim] *= parts;
  auto wholeType = local.clone(whole);
  auto gather = [&](mlir::Value in, mlir::RankedTensorType type, int64_t axis) {
    auto op = createCollective<dist::AllGatherOp>(b, at, groups, type, in,
                                                  b.getI64IntegerAttr(axis));
    dist::setBalanced(op, balanced);
    placeLike(op, at);
    mlir::Value out = op.getResult();
    return onGathered ? onGathered(out) : out;
  };
  auto place = [&](mlir::Operation *op) {
    placeLike(op, at);
    return op->getResult(0);
  };
  if (contiguousAlong(local, dim))
    return gather(v, wholeType, dim);
  // The rank's chunks (1, or the balanced 2) along a new leading dimension.
  const int64_t chunks = balanced ? 2 : 1;
  llvm::SmallVector<int64_t> chunk(local.getShape());
  chunk[dim] /= chunks;
  llvm::SmallVector<int64_t> lead{chunks}, stacked{chunks * parts};
  lead.append(chunk.begin(), chunk.end());
  stacked.append(chunk.begin(), chunk.end());
  mlir::Value x;
  if (!balanced) {
    x = place(graph::ReshapeOp::create(b, loc, local.clone(lead), v));
  } else {
    // [a.., n/parts, b..] -> [a.., 2, n/(2 parts), b..] -> [2, a.., ..]
    llvm::SmallVector<int64_t> cut(chunk);
    cut.insert(cut.begin() + dim, chunks);
    llvm::SmallVector<int64_t> first{dim};
    for (int64_t d = 0; d < static_cast<int64_t>(cut.size()); ++d)
      if (d != dim)
        first.push_back(d);
    x = place(graph::ReshapeOp::create(b, loc, local.clone(cut), v));
    x = place(graph::TransposeOp::create(b, loc, local.clone(lead), x,
                                         b.getDenseI64ArrayAttr(first)));
  }
  x = gather(x, local.clone(stacked), 0);
  // [chunks parts, a.., n/(chunks parts), b..] -> [a.., chunks parts, ..]
  llvm::SmallVector<int64_t> perm, moved;
  for (int64_t d = 1; d <= dim; ++d)
    perm.push_back(d);
  perm.push_back(0);
  for (int64_t d = dim + 1; d <= local.getRank(); ++d)
    perm.push_back(d);
  for (int64_t d : perm)
    moved.push_back(stacked[d]);
  x = place(graph::TransposeOp::create(b, loc, local.clone(moved), x,
                                       b.getDenseI64ArrayAttr(perm)));
  return place(graph::ReshapeOp::create(b, loc, wholeType, x));
}

/// The rank's part along `dim` over the ranks of `groups` of `v`, where `b`
/// inserts, placed like `at`: made by `Op` (`dist.all_slice` of a whole
/// value, `dist.reduce_scatter` of partial sums; `args` come before the
/// axis) along `dim` when every dimension before it is 1, else `dim` cut
/// into [parts, n/parts], the parts moved to a new leading dimension and
/// taken there (the runtime's collectives take blocks of the leading
/// dimension; their gradients, all-gathers, gather along it). `balanced`:
/// the rank's part is chunks c and 2 parts - 1 - c of 2 parts (a
/// `balanced` collective; off the leading dimension, [2 parts, n/(2
/// parts)] moved first, and the two chunks taken moved back).
template <typename Op, typename... Args>
mlir::Value partAlong(mlir::OpBuilder &b, mlir::Operation *at, mlir::Value v,
                      int64_t dim,
                      const std::vector<std::vector<unsigned>> &groups,
                      bool balanced, Args... args) {
  int64_t parts = groups.front().size();
  mlir::Location loc = v.getLoc();
  auto whole = mlir::cast<mlir::RankedTensorType>(v.getType());
  llvm::SmallVector<int64_t> part(whole.getShape());
  part[dim] /= parts;
  auto take = [&](mlir::Value in, mlir::RankedTensorType type, int64_t axis) {
    auto op = createCollective<Op>(b, at, groups, type, in, args...,
                                   b.getI64IntegerAttr(axis));
    dist::setBalanced(op, balanced);
    placeLike(op, at);
    return op.getResult();
  };
  auto place = [&](mlir::Operation *op) {
    placeLike(op, at);
    return op->getResult(0);
  };
  if (contiguousAlong(whole, dim))
    return take(v, whole.clone(part), dim);
  // [a.., n, b..] -> [a.., k, n/k, b..] -> [k, a.., n/k, b..] with k =
  // parts (2 parts balanced)
  const int64_t chunks = balanced ? 2 : 1;
  llvm::SmallVector<int64_t> cut(whole.getShape().take_front(dim));
  cut.push_back(chunks * parts);
  cut.push_back(part[dim] / chunks);
  cut.append(part.begin() + dim + 1, part.end());
  mlir::Value x = place(graph::ReshapeOp::create(b, loc, whole.clone(cut), v));
  llvm::SmallVector<int64_t> perm{dim}, moved;
  for (int64_t d = 0; d < static_cast<int64_t>(cut.size()); ++d)
    if (d != dim)
      perm.push_back(d);
  for (int64_t d : perm)
    moved.push_back(cut[d]);
  x = place(graph::TransposeOp::create(b, loc, whole.clone(moved), x,
                                       b.getDenseI64ArrayAttr(perm)));
  moved[0] = chunks;
  x = take(x, whole.clone(moved), 0);
  if (balanced) {
    // [2, a.., n/(2 parts), b..] -> [a.., 2, n/(2 parts), b..]
    llvm::SmallVector<int64_t> back, shape;
    for (int64_t d = 1; d <= dim; ++d)
      back.push_back(d);
    back.push_back(0);
    for (int64_t d = dim + 1; d < static_cast<int64_t>(moved.size()); ++d)
      back.push_back(d);
    for (int64_t d : back)
      shape.push_back(moved[d]);
    x = place(graph::TransposeOp::create(b, loc, whole.clone(shape), x,
                                         b.getDenseI64ArrayAttr(back)));
  }
  return place(graph::ReshapeOp::create(b, loc, whole.clone(part), x));
}

/// The rank's part of the whole `v` along `dim` (partAlong's
/// `dist.all_slice`).
inline mlir::Value sliceWhole(mlir::OpBuilder &b, mlir::Operation *at,
                              mlir::Value v, int64_t dim,
                              const std::vector<std::vector<unsigned>> &groups,
                              bool balanced = false) {
  return partAlong<dist::AllSliceOp>(b, at, v, dim, groups, balanced);
}

/// The rank's part along `dim` of the sum over `groups` of the ranks'
/// partial sums `v` (partAlong's `dist.reduce_scatter`: each element summed
/// on one rank).
inline mlir::Value
scatterSum(mlir::OpBuilder &b, mlir::Operation *at, mlir::Value v, int64_t dim,
           const std::vector<std::vector<unsigned>> &groups) {
  return partAlong<dist::ReduceScatterOp>(
      b, at, v, dim, groups, /*balanced=*/false,
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::sum));
}

/// The values of `func` computed from its arguments (the others come from
/// weights and constants alone).
inline llvm::DenseSet<mlir::Value> sampleDependent(mlir::func::FuncOp func) {
  llvm::DenseSet<mlir::Value> dependent(func.getArguments().begin(),
                                        func.getArguments().end());
  func.walk([&](mlir::Operation *op) {
    if (llvm::any_of(op->getOperands(),
                     [&](mlir::Value v) { return dependent.contains(v); }))
      dependent.insert(op->result_begin(), op->result_end());
  });
  return dependent;
}

} // namespace distopt::split

#endif // DISTOPT_PASSES_DISTRIBUTE_SPLITVALUES_H
