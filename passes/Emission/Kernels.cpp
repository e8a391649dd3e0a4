//===- Kernels.cpp - Which ops run as one kernel ----------------*- C++ -*-===//
//
// Part of DistOpt. Groups ops into `emit.kernel` regions, in this order:
//
// 1. post_ops (CPU): a matmul or convolution and the chain of elementwise
//    ops after it, each the only reader of the value before it, that
//    oneDNN applies before storing the result (bias, activation, residual
//    add, scaling): one pass over memory instead of one per op. Exporters
//    put reshapes between a matmul and its activation (Gemm works on 2-D
//    rows); an elementwise op commutes with a reshape, so the reshape is
//    moved below it first (`reshape(mm) -> gelu` becomes
//    `gelu(mm) -> reshape`, a full-shape second operand being reshaped
//    too, as a view).
// 2. loop: every other elementwise op is computed inside its user's loop
//    when its result has exactly one use, by an elementwise op with the
//    same result shape; then its value at element i is what the user reads
//    at element i, so `x * s + b -> gelu -> * y` is one pass with the
//    intermediates in registers. A result used twice, or broadcast by its
//    user, is stored (fusing it would recompute it per use or per
//    broadcast element).
// No kernel spans two actions of a pipeline schedule (`dist.action`): work
// the schedule runs early (a micro-batch's gradient added to the running
// sum after its backward) is not moved into a later action's loop, where
// its operands would have to live until then.
// 3. eltwise (CPU, with the eltwise-kernels option): a loop of a single f32
//    transcendental unary op (gelu, tanh, exp, ...) runs on the runtime's
//    vectorized kernel instead.
//
// Before 1 (CPU), a convolution whose input and kernel are 1x1 in space
// (the squeeze-excitation blocks of MobileNet and EfficientNet) becomes a
// matmul between reshapes: a `[N, C, 1, 1]` tensor is both NCHW and NHWC,
// and oneDNN has no fast convolution for it (37% of MobileNetV3's time),
// while its GEMM takes the same post-ops.
//
// The legality rules are the dialect's (dialects/Emit/KernelRules.h),
// which the kernel verifier checks again.
//
//===----------------------------------------------------------------------===//
#include "passes/Emission/EmissionSteps.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Emit/KernelRules.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::emit;

/// Moves `ops` (in block order, the last one yielded) into a new kernel of
/// `kind` placed where the last one was; values from outside become the
/// kernel's inputs. `loc` names the kernel in messages and profiles.
static KernelOp outline(ArrayRef<Operation *> ops, KernelKind kind,
                        Location loc) {
  Operation *root = ops.back();
  llvm::DenseSet<Operation *> inside(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      if (!inside.contains(v.getDefiningOp()))
        inputs.insert(v);
  OpBuilder b(root);
  auto kernel = KernelOp::create(b, loc, root->getResult(0).getType(),
                                 KernelKindAttr::get(b.getContext(), kind),
                                 inputs.getArrayRef());
  Block *body = new Block();
  kernel.getBody().push_back(body);
  for (Value v : inputs)
    body->addArgument(v.getType(), v.getLoc());
  llvm::DenseMap<Value, unsigned> argOf;
  for (auto [k, v] : llvm::enumerate(inputs))
    argOf[v] = k;
  root->getResult(0).replaceAllUsesWith(kernel.getResult());
  for (Operation *op : ops) {
    op->moveBefore(body, body->end());
    for (OpOperand &use : op->getOpOperands())
      if (!inside.contains(use.get().getDefiningOp()))
        use.set(body->getArgument(argOf.lookup(use.get())));
  }
  b.setInsertionPointToEnd(body);
  YieldOp::create(b, loc, root->getResult(0));
  return kernel;
}

/// Moves the reshape that separates `v` (single use) from the elementwise
/// op reading it below that op, when the op's other operand, if any, is a
/// scalar, the same per-column vector, or a full tensor (reshaped too).
/// Returns the op's new result (of `v`'s shape), or null.
static Value sinkReshape(Value v, Operation *anchor) {
  if (!v.hasOneUse())
    return nullptr;
  Operation *reshape = *v.getUsers().begin();
  if (!isa<graph::ReshapeOp, graph::FlattenOp>(reshape) ||
      !reshape->getResult(0).hasOneUse())
    return nullptr;
  Value r = reshape->getResult(0);
  Operation *user = *r.getUsers().begin();
  if (!isElementwiseOp(user) || user->getNumResults() != 1 ||
      user->getResult(0).getType() != r.getType() ||
      user->getBlock() != anchor->getBlock() || isa<graph::UnaryGradOp>(user))
    return nullptr;
  auto from = cast<RankedTensorType>(v.getType());
  auto to = cast<RankedTensorType>(r.getType());
  OpBuilder b(user);
  SmallVector<Value> operands;
  for (Value o : user->getOperands()) {
    if (o == r) {
      operands.push_back(v);
      continue;
    }
    auto t = cast<RankedTensorType>(o.getType());
    if (t.getShape() == to.getShape()) {
      operands.push_back(graph::ReshapeOp::create(
          b, o.getLoc(),
          RankedTensorType::get(from.getShape(), t.getElementType()), o));
      continue;
    }
    bool scalar = t.getNumElements() == 1 && t.getRank() <= from.getRank();
    bool column = t.getRank() == 1 &&
                  from.getShape().back() == t.getDimSize(0) &&
                  to.getShape().back() == t.getDimSize(0);
    if (!scalar && !column)
      return nullptr;
    operands.push_back(o);
  }
  if (llvm::count(user->getOperands(), r) != 1)
    return nullptr;
  OperationState state(user->getLoc(), user->getName());
  state.addOperands(operands);
  state.addAttributes(user->getAttrs());
  state.addTypes(RankedTensorType::get(from.getShape(), to.getElementType()));
  Operation *moved = b.create(state);
  auto after =
      graph::ReshapeOp::create(b, reshape->getLoc(), to, moved->getResult(0));
  user->getResult(0).replaceAllUsesWith(after.getResult());
  user->erase();
  reshape->erase();
  return moved->getResult(0);
}

/// True when `a` and `b` belong to the same action of a pipeline schedule
/// (or neither to any).
static bool sameAction(Operation *a, Operation *b) {
  StringRef name = dist::DistDialect::ActionAttrHelper::getNameStr();
  return a->getAttr(name) == b->getAttr(name);
}

/// The elementwise chain after `anchor` that oneDNN can apply as post-ops.
static SmallVector<Operation *> postOpChain(Operation *anchor) {
  SmallVector<Operation *> chain{anchor};
  Value v = anchor->getResult(0);
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (isa<graph::ReshapeOp, graph::FlattenOp>(user)) {
      // Sink it when the op after it is a post-op once moved above it.
      Operation *next = user->getResult(0).hasOneUse()
                            ? *user->getResult(0).getUsers().begin()
                            : nullptr;
      if (!next || !isElementwiseOp(next) || !sinkReshape(v, anchor))
        break;
      user = *v.getUsers().begin();
    }
    if (user->getBlock() != anchor->getBlock() || !sameAction(user, anchor) ||
        !postOpsOf(user, v, anchor))
      break;
    chain.push_back(user);
    v = user->getResult(0);
  }
  return chain;
}

/// Marks elementwise ops computed inside their single user's loop.
static llvm::DenseSet<Operation *> fusedIntoUser(Block &body) {
  llvm::DenseSet<Operation *> fused;
  for (Operation &op : body) {
    if (!isElementwiseOp(&op) || op.getNumResults() != 1)
      continue;
    Value result = op.getResult(0);
    if (!result.hasOneUse())
      continue;
    Operation *user = *result.getUsers().begin();
    if (user->getBlock() != &body || !isElementwiseOp(user) ||
        !sameAction(&op, user))
      continue;
    if (cast<RankedTensorType>(result.getType()).getShape() !=
        cast<RankedTensorType>(user->getResult(0).getType()).getShape())
      continue;
    fused.insert(&op);
  }
  return fused;
}

/// `root` and the ops fused into it, transitively, in block order.
static SmallVector<Operation *>
loopGroup(Operation *root, const llvm::DenseSet<Operation *> &fused) {
  llvm::SetVector<Operation *> group;
  SmallVector<Operation *> stack{root};
  while (!stack.empty()) {
    Operation *op = stack.pop_back_val();
    if (!group.insert(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && fused.contains(def))
        stack.push_back(def);
  }
  SmallVector<Operation *> ops(group.begin(), group.end());
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ops;
}

/// Rewrites a convolution of a 1x1 (in every spatial dimension) input by
/// a 1x1 kernel, ungrouped and unpadded, as
/// `reshape(matmul(reshape(x), reshape(w)^T + bias))`: the same sums, of
/// `[N, C] x [C, M]`.
static void pointwiseConvsAsMatmuls(Block &body) {
  SmallVector<graph::ConvOp> convs;
  for (auto conv : body.getOps<graph::ConvOp>()) {
    auto x = cast<RankedTensorType>(conv.getInput().getType());
    auto w = cast<RankedTensorType>(conv.getWeight().getType());
    auto ones = [](ArrayRef<int64_t> dims) {
      return llvm::all_of(dims, [](int64_t d) { return d == 1; });
    };
    if (x.getRank() >= 3 && x.hasStaticShape() && w.hasStaticShape() &&
        ones(x.getShape().drop_front(2)) && ones(w.getShape().drop_front(2)) &&
        conv.getGroup() == 1 &&
        llvm::all_of(conv.getPads(), [](int64_t p) { return p == 0; }))
      convs.push_back(conv);
  }
  for (graph::ConvOp conv : convs) {
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    auto x = cast<RankedTensorType>(conv.getInput().getType());
    auto w = cast<RankedTensorType>(conv.getWeight().getType());
    auto y = cast<RankedTensorType>(conv.getResult().getType());
    int64_t n = x.getDimSize(0), c = x.getDimSize(1), m = w.getDimSize(0);
    Value rows = graph::ReshapeOp::create(
        b, loc, RankedTensorType::get({n, c}, x.getElementType()),
        conv.getInput());
    Value weight = graph::ReshapeOp::create(
        b, loc, RankedTensorType::get({m, c}, w.getElementType()),
        conv.getWeight());
    SmallVector<Value> operands{rows, weight};
    if (Value bias = conv.getBias())
      operands.push_back(bias);
    auto mm = graph::MatmulOp::create(
        b, loc, TypeRange{RankedTensorType::get({n, m}, y.getElementType())},
        operands,
        ArrayRef<NamedAttribute>{
            b.getNamedAttr("transpose_rhs", b.getBoolAttr(true))});
    mm->setDiscardableAttrs(conv->getDiscardableAttrDictionary());
    auto out = graph::ReshapeOp::create(b, loc, y, mm.getResult());
    // The reshapes run in the convolution's schedule action too.
    StringRef action = dist::DistDialect::ActionAttrHelper::getNameStr();
    if (Attribute a = conv->getAttr(action))
      for (Operation *op : {rows.getDefiningOp(), weight.getDefiningOp(),
                            static_cast<Operation *>(out)})
        op->setAttr(action, a);
    conv.getResult().replaceAllUsesWith(out.getResult());
    conv.erase();
  }
}

void emission::formKernels(Block &body, const EmissionOptions &options) {
  if (options.cpu)
    pointwiseConvsAsMatmuls(body);
  if (options.cpu && options.postOps) {
    SmallVector<Operation *> anchors;
    for (Operation &op : body)
      if (isPostOpAnchor(&op))
        anchors.push_back(&op);
    for (Operation *anchor : anchors) {
      SmallVector<Operation *> chain = postOpChain(anchor);
      if (chain.size() > 1)
        outline(chain, KernelKind::post_ops, anchor->getLoc());
    }
  }
  llvm::DenseSet<Operation *> fused = fusedIntoUser(body);
  SmallVector<Operation *> roots;
  for (Operation &op : body)
    if (isElementwiseOp(&op) && !fused.contains(&op))
      roots.push_back(&op);
  for (Operation *root : roots) {
    SmallVector<Operation *> group = loopGroup(root, fused);
    bool eltwise = options.cpu && options.eltwise && group.size() == 1 &&
                   standaloneEltwise(root).has_value();
    outline(group, eltwise ? KernelKind::eltwise : KernelKind::loop,
            root->getLoc());
  }
}
