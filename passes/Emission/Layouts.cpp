//===- Layouts.cpp - Views and layouts of values ----------------*- C++ -*-===//
//
// Part of DistOpt. Decides how every value is laid out in memory, so that
// data movement happens only where some kernel needs it:
//
// - views: reshape, flatten, inference dropout, transpose, slice (positive
//   steps) and split results are views of their operand's memory with the
//   strides they are read with (`#emit.buffer<view, offset, strides>`); a
//   transpose or a head split costs nothing when its reader takes strides;
// - channels-last (CPU): a 2-D convolution writes NHWC (a 1-D one NWC),
//   which oneDNN's jit kernels (AVX2 and AVX-512, depthwise included) run
//   natively; its gemm kernel for NCHW applies post-ops such as gelu_erf
//   one element at a time (a Whisper 1-D convolution: 6.1 ms against 1.4
//   without the post-op, DNNL_VERBOSE, 2026-12-07); pooling
//   and elementwise loops keep the layout of their input, so a chain of
//   convolutions stays channels-last instead of being reordered per op.
//   NHWC rather than oneDNN's blocked nChw8c: on AVX2 a whole ResNet-18
//   chain kept blocked, its edges counted, ran 3% (least times) to 7%
//   (CPU-time medians under load) faster, below a whole program's
//   run-to-run spread there (an earlier run on AVX-512 found the layouts
//   as fast per shape; docs/benchmarks.md, "ResNet-18 as one blocked
//   chain"), and NHWC has no padded channels, so every generated loop and
//   view is a plain permutation of strides;
// - copies: where a reader needs another layout than its operand has (a
//   runtime kernel that takes row-major memory, a convolution whose input is
//   NCHW, a returned value), `emit.copy` materializes it once per value and
//   layout, just before its first such reader.
//
// What each reader takes is decided here, per operand: generated loops and
// views read any strides; matmul operands any strides with a unit stride
// in one of the matrix dims (as distrt_matmul_ex does); convolution and
// pooling inputs the layout of their output; everything else row-major.
//
//===----------------------------------------------------------------------===//
#include "passes/Emission/EmissionSteps.h"

#include "dialects/Emit/KernelRules.h"
#include "dialects/Emit/MemoryPlan.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

#include <map>

using namespace mlir;
using namespace distopt;
using namespace distopt::emit;
namespace g = distopt::graph;

namespace {

/// What a reader needs of an operand's layout.
enum class Need {
  Any,      ///< any strides (generated loops, views, copies)
  Matrix,   ///< a unit stride in one of the last two dims (matmul)
  Like,     ///< the strides `like` has (convolution / pooling input)
  Order,    ///< dense in the dim order of `like` (post-op operand)
  RowMajor, ///< dense row-major
};

struct Requirement {
  Need need = Need::RowMajor;
  Value like;
};

using Strides = SmallVector<int64_t>;

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

Strides rowMajor(Value v) {
  return rowMajorStrides(cast<RankedTensorType>(v.getType()).getShape());
}

/// Dense strides of `shape` with its dims in the order of `like`'s strides
/// (outermost first; equal strides keep the dim order): `like` row-major
/// gives row-major, channels-last gives channels-last.
Strides orderedStrides(ArrayRef<int64_t> shape, ArrayRef<int64_t> like) {
  SmallVector<unsigned> order(shape.size());
  for (unsigned d = 0; d < order.size(); ++d)
    order[d] = d;
  llvm::stable_sort(order,
                    [&](unsigned a, unsigned b) { return like[a] > like[b]; });
  Strides s(shape.size(), 1);
  int64_t inner = 1;
  for (unsigned k = order.size(); k-- > 0;) {
    s[order[k]] = inner;
    inner *= shape[order[k]];
  }
  return s;
}

/// Channels-last strides of a rank-4 NCHW- or rank-3 NCW-shaped tensor
/// (NHWC, NWC).
Strides channelsLast(ArrayRef<int64_t> s) {
  if (s.size() == 3)
    return {s[1] * s[2], 1, s[1]};
  return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

/// The ranks a convolution chain may run channels-last in: 2-D and 1-D.
bool hasImageRank(ArrayRef<int64_t> shape) {
  return shape.size() == 3 || shape.size() == 4;
}

/// Whether a rank-3 or rank-4 value is laid out channels-last (and not
/// also row-major, as a [N, C, 1, 1] tensor is both).
bool isChannelsLast(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!hasImageRank(t.getShape()))
    return false;
  Strides s = stridesOf(v);
  return sameLayout(t.getShape(), s, channelsLast(t.getShape())) &&
         !sameLayout(t.getShape(), s, rowMajorStrides(t.getShape()));
}

bool isConvAnchor(Operation *op) {
  if (auto k = dyn_cast<KernelOp>(op))
    return k.getAnchor() && isa<g::ConvOp>(k.getAnchor());
  auto conv = dyn_cast<g::ConvOp>(op);
  return conv && isPostOpAnchor(conv);
}

/// The graph op of `op` that reads kernel input `i` (for a post_ops
/// kernel), with the operand number it reads it as.
SmallVector<std::pair<Operation *, unsigned>> innerUses(KernelOp k,
                                                        unsigned i) {
  SmallVector<std::pair<Operation *, unsigned>> uses;
  for (OpOperand &u : k.getBody().getArgument(i).getUses())
    uses.push_back({u.getOwner(), u.getOperandNumber()});
  return uses;
}

/// Whether `v` reaches a convolution or a pooling through ops that keep a
/// layout (elementwise loops, post-op operands, pooling): then writing it
/// channels-last saves reorders further down the chain.
bool feedsConvChain(Value v, unsigned depth = 0) {
  if (depth > 8)
    return false;
  for (Operation *user : v.getUsers()) {
    if (isConvAnchor(user) || isa<g::PoolOp>(user))
      return true;
    auto k = dyn_cast<KernelOp>(user);
    if (k &&
        (k.getKind() == KernelKind::loop ||
         k.getKind() == KernelKind::post_ops) &&
        k.getResult().getType() == v.getType() &&
        feedsConvChain(k.getResult(), depth + 1))
      return true;
  }
  return false;
}

class LayoutAssigner {
public:
  LayoutAssigner(Block &body, const emission::EmissionOptions &options)
      : body(body), options(options) {}

  void run() {
    // A convolution's output layout is its own choice and its input must
    // follow it, so results are laid out before operands are legalized.
    for (Operation &op : llvm::make_early_inc_range(body)) {
      chooseResultLayout(&op);
      legalizeOperands(&op);
    }
  }

private:
  Block &body;
  const emission::EmissionOptions &options;
  /// Copies made so far: (value, strides) -> the copy.
  std::map<std::pair<void *, std::vector<int64_t>>, Value> copies;

  Strides layoutOf(Value v) { return stridesOf(v); }

  /// What `op` needs of operand `i`.
  Requirement requirement(Operation *op, unsigned i) {
    bool cpu = options.cpu;
    if (isa<CopyOp>(op) || isViewableOp(op))
      return {Need::Any, {}};
    if (auto k = dyn_cast<KernelOp>(op)) {
      if (k.getKind() == KernelKind::loop)
        return {Need::Any, {}};
      if (k.getKind() == KernelKind::eltwise)
        return {Need::RowMajor, {}};
      Requirement strictest{Need::Any, {}};
      for (auto [user, n] : innerUses(k, i)) {
        Requirement r = graphRequirement(user, n, k.getResult());
        // A post-op operand: oneDNN reads it in the layout of the result
        // (its jit kernels index it with the result's offsets).
        if (user != k.getAnchor())
          r = {cpu ? Need::Order : Need::RowMajor, k.getResult()};
        if (r.need > strictest.need)
          strictest = r;
      }
      return strictest;
    }
    return graphRequirement(op, i,
                            op->getNumResults() ? op->getResult(0) : Value());
  }

  /// What graph op `op` (whose result lives in `out`) needs of operand `i`.
  Requirement graphRequirement(Operation *op, unsigned i, Value out) {
    if (!options.cpu)
      return {readsAnyStrides(op, i) ? Need::Any : Need::RowMajor, {}};
    if (auto mm = dyn_cast<g::MatmulOp>(op)) {
      if (i >= 2)
        return {Need::RowMajor, {}};
      // The printer reads rank >= 2 operands whose batch dims are the
      // result's (or absent) as they are; others it copies itself.
      auto t = cast<RankedTensorType>(op->getOperand(i).getType());
      auto o = cast<RankedTensorType>(mm.getResult().getType());
      bool direct = t.getRank() >= 2 &&
                    (t.getRank() == 2 ||
                     t.getShape().drop_back(2) == o.getShape().drop_back(2));
      return {direct && t.getElementType().isF32() ? Need::Matrix
                                                   : Need::RowMajor,
              {}};
    }
    if (isa<g::ConvOp>(op) && i == 0 && isPostOpAnchor(op))
      return {Need::Like, out};
    if (auto pool = dyn_cast<g::PoolOp>(op))
      if (pool.getKind() != g::PoolKind::L2 &&
          cast<RankedTensorType>(pool.getInput().getType()).getRank() == 4)
        return {Need::Like, out};
    return {readsAnyStrides(op, i) ? Need::Any : Need::RowMajor, {}};
  }

  /// Ops lowered to generated loops that read any strides (the printer
  /// indexes every operand through its plan's strides).
  static bool readsAnyStrides(Operation *op, unsigned) {
    if (isElementwiseOp(op))
      return true;
    return isa<g::GatherOp, g::GatherElementsOp, g::TransposeOp, g::SliceOp,
               g::SplitOp, g::ConcatOp, g::ExpandOp, g::PadOp, g::TriluOp,
               g::CumSumOp, g::TopKOp>(op);
  }

  bool satisfies(Value v, const Requirement &r) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    Strides s = layoutOf(v);
    switch (r.need) {
    case Need::Any:
      return true;
    case Need::RowMajor:
      return sameLayout(shape, s, rowMajor(v));
    case Need::Matrix: {
      size_t n = s.size();
      return n >= 2 && (s[n - 1] == 1 || s[n - 2] == 1 || shape[n - 1] == 1 ||
                        shape[n - 2] == 1);
    }
    case Need::Order:
      return sameLayout(shape, s, orderStrides(v, r.like));
    case Need::Like: {
      // Both NCHW or both channels-last (a [N, C, 1, 1] output is both).
      auto os = cast<RankedTensorType>(r.like.getType()).getShape();
      Strides o = layoutOf(r.like);
      if (sameLayout(shape, s, rowMajor(v)) &&
          sameLayout(os, o, rowMajor(r.like)))
        return true;
      return hasImageRank(shape) && os.size() == shape.size() &&
             sameLayout(shape, s, channelsLast(shape)) &&
             sameLayout(os, o, channelsLast(os));
    }
    }
    return false;
  }

  /// `v` (a post-op operand, its dims aligned to the trailing dims of
  /// `like`, the kernel's result) laid out densely in `like`'s dim order.
  Strides orderStrides(Value v, Value like) {
    auto shape = shapeOf(v);
    Strides l = layoutOf(like);
    if (shape.size() > l.size())
      return rowMajor(v);
    return orderedStrides(shape, ArrayRef<int64_t>(l).take_back(shape.size()));
  }

  /// `v`'s shape laid out the way `like` (a convolution's or pooling's
  /// output, of another shape) is: channels-last or row-major.
  Strides likeStrides(Value v, Value like) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    if (hasImageRank(shape) && isChannelsLast(like) &&
        cast<RankedTensorType>(like.getType()).getRank() ==
            (int64_t)shape.size())
      return channelsLast(shape);
    return rowMajor(v);
  }

  /// `v` copied into `strides`, made before `before` (once per layout).
  Value copyOf(Value v, ArrayRef<int64_t> strides, Operation *before) {
    auto key =
        std::make_pair(v.getAsOpaquePointer(),
                       std::vector<int64_t>(strides.begin(), strides.end()));
    auto it = copies.find(key);
    if (it != copies.end())
      return it->second;
    OpBuilder b(before);
    auto copy = CopyOp::create(b, v.getLoc(), v.getType(), v);
    setArena(copy, strides);
    copies[key] = copy.getResult();
    return copy.getResult();
  }

  /// Records the layout of an arena result (offsets come later).
  void setArena(Operation *op, ArrayRef<int64_t> strides) {
    Value r = op->getResult(0);
    SmallVector<int64_t> recorded;
    if (!sameLayout(cast<RankedTensorType>(r.getType()).getShape(), strides,
                    rowMajor(r)))
      recorded.assign(strides.begin(), strides.end());
    op->setAttr(
        kBuffersAttr,
        ArrayAttr::get(op->getContext(),
                       {BufferAttr::get(op->getContext(), BufferKind::arena, 0,
                                        0, recorded)}));
  }

  /// Copies operands whose layout `op` cannot read.
  void legalizeOperands(Operation *op) {
    bool terminator = op->hasTrait<OpTrait::IsTerminator>();
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t)
        continue;
      Requirement r = terminator ? Requirement{Need::RowMajor, {}}
                                 : requirement(op, use.getOperandNumber());
      if (satisfies(v, r))
        continue;
      Strides want = rowMajor(v);
      if (r.need == Need::Like)
        want = likeStrides(v, r.like);
      else if (r.need == Need::Order)
        want = orderStrides(v, r.like);
      use.set(copyOf(v, want, op));
    }
  }

  /// A matmul whose only reader transposes it (attention's head merge,
  /// [B, H, S, D] -> [B, S, H, D]) writes its result in the order the
  /// transpose reads, so the transpose is a row-major view and the reshape
  /// after it a view too: no copy of the attention output.
  bool chooseMatmulLayout(Operation *op) {
    Operation *mm = op;
    if (auto k = dyn_cast<KernelOp>(op))
      mm = k.getAnchor();
    // (An anchor: f32, rank >= 2, no bias the printer adds by a loop.)
    if (!mm || !isa<g::MatmulOp>(mm) || !isPostOpAnchor(mm) ||
        !op->getResult(0).hasOneUse())
      return false;
    auto t = cast<RankedTensorType>(op->getResult(0).getType());
    auto tr = dyn_cast<g::TransposeOp>(*op->getResult(0).getUsers().begin());
    if (!tr || t.getRank() < 3)
      return false;
    Strides rm = rowMajor(tr.getResult()), strides(t.getRank(), 0);
    for (auto [i, p] : llvm::enumerate(tr.getPerm()))
      strides[p] = rm[i];
    // The matmul writes each [M, N] matrix with a unit stride along N.
    if (strides.back() != 1)
      return false;
    setArena(op, strides);
    return true;
  }

  /// Views for view ops, channels-last for convolution chains, the input's
  /// layout for pooling and elementwise loops.
  void chooseResultLayout(Operation *op) {
    if (op->getNumResults() == 0 || op->hasTrait<OpTrait::IsTerminator>() ||
        isa<CopyOp>(op))
      return;
    if (isViewableOp(op)) {
      if (!options.views && !isa<g::ReshapeOp, g::FlattenOp, g::DropoutOp>(op))
        return;
      Strides in = layoutOf(op->getOperand(0));
      SmallVector<std::optional<ViewLayout>> views;
      for (unsigned k = 0; k < op->getNumResults(); ++k)
        views.push_back(viewLayout(op, k, in));
      if (llvm::any_of(views, [](auto &v) { return !v; })) {
        // A reshape of memory it cannot view: view a row-major copy.
        op->setOperand(
            0, copyOf(op->getOperand(0), rowMajor(op->getOperand(0)), op));
        views.clear();
        for (unsigned k = 0; k < op->getNumResults(); ++k)
          views.push_back(viewLayout(op, k, rowMajor(op->getOperand(0))));
      }
      SmallVector<Attribute> list;
      for (auto [k, v] : llvm::enumerate(views)) {
        Value r = op->getResult(k);
        SmallVector<int64_t> recorded;
        if (!sameLayout(cast<RankedTensorType>(r.getType()).getShape(),
                        v->strides, rowMajor(r)))
          recorded = v->strides;
        list.push_back(BufferAttr::get(op->getContext(), BufferKind::view,
                                       v->offset, 0, recorded));
      }
      op->setAttr(kBuffersAttr, ArrayAttr::get(op->getContext(), list));
      return;
    }
    if (!options.cpu || op->getNumResults() != 1)
      return;
    if (options.views && chooseMatmulLayout(op))
      return;
    if (!options.channelsLast)
      return;
    auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!t || !hasImageRank(t.getShape()) || !t.getElementType().isF32())
      return;
    bool nhwc = false;
    if (isConvAnchor(op)) {
      // A lone 2-D convolution (a ViT patch embedding) whose result goes to
      // row-major readers stays NCHW; one in a chain goes channels-last. A
      // 1-D one always does: NCW runs on oneDNN's gemm kernel, whose
      // post-ops cost more than a reorder of the input.
      nhwc = t.getRank() == 3 || feedsConvChain(op->getResult(0)) ||
             isChannelsLast(op->getOperand(0));
    } else if (isa<g::PoolOp>(op) && t.getRank() == 4) {
      Value in = op->getOperand(0);
      nhwc = !sameLayout(t.getShape(), layoutOf(in), rowMajor(in)) &&
             sameLayout(
                 cast<RankedTensorType>(in.getType()).getShape(), layoutOf(in),
                 channelsLast(cast<RankedTensorType>(in.getType()).getShape()));
    } else if (auto k = dyn_cast<KernelOp>(op);
               k && k.getKind() == KernelKind::loop) {
      nhwc = llvm::any_of(k.getInputs(), [&](Value in) {
        return in.getType() == t && isChannelsLast(in);
      });
    }
    if (nhwc)
      setArena(op, channelsLast(t.getShape()));
  }
};

} // namespace

void emission::assignLayouts(Block &body,
                             const emission::EmissionOptions &options) {
  LayoutAssigner(body, options).run();
}
