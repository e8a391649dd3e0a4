//===- DataParallel.cpp - The dist-data-parallel pass -----------*- C++ -*-===//
//
// Part of DistOpt. Makes the training functions of dist-autodiff data
// parallel: every rank runs the same program on its own rows of the batch,
// gradients are averaged over the world right before the optimizer reads
// them, and the returned loss is the world's mean. With ZeRO-1 the
// gradients are reduce-scattered instead and each rank updates its shard
// of every parameter (ZeroShard.h); ZeRO-2 reduce-scatters each gradient
// as soon as the backward computed it; ZeRO-3 also keeps only the shard of
// each parameter and gathers it for the forward and again for the
// backward. docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#include "passes/Distribute/DataParallel.h"
#include "passes/Distribute/ZeroShard.h"
#include "passes/Passes.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace distopt {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "passes/Distribute/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

dist::PlanAttr distopt::dataParallelPlan(ModuleOp module) {
  auto plan = dist::DistDialect::PlanAttrHelper(module.getContext())
                  .getAttr(module);
  if (!plan || plan.getNumVirtualStages() != 1 || plan.getTp() != 1 ||
      plan.getCp() != 1 || plan.getEp() != 1 || !plan.getReplicas().empty())
    return {};
  return plan;
}

namespace {

/// The role dist-autodiff gave `func` ("step", "microbatch", "apply"), or
/// "" for other functions.
StringRef roleOf(func::FuncOp func) {
  auto cfg = func->getAttrOfType<DictionaryAttr>("graph.train");
  if (!cfg)
    return "";
  auto role = cfg.getAs<StringAttr>("role");
  return role ? role.getValue() : "";
}

/// `value` averaged (or combined by `kind`) over every rank, computed at
/// the builder's insertion point.
Value reduceHere(OpBuilder &b, Location loc, Value value,
                 dist::ReductionKind kind, StringRef phase) {
  auto op = dist::AllReduceOp::create(
      b, loc, value.getType(), value,
      dist::ReductionKindAttr::get(b.getContext(), kind),
      b.getDenseI64ArrayAttr({}));
  op->setAttr("graph.phase", b.getStringAttr(phase));
  return op.getResult();
}

/// reduceHere right before `user`.
Value reduceBefore(OpBuilder &b, Operation *user, Value value,
                   dist::ReductionKind kind, StringRef phase = "optimizer") {
  b.setInsertionPoint(user);
  return reduceHere(b, user->getLoc(), value, kind, phase);
}

bool isReduced(Value v) {
  return v.getDefiningOp<dist::AllReduceOp>() != nullptr;
}

bool isAccumulator(Operation *op) {
  auto state = dyn_cast_if_present<graph::StateOp>(op);
  return state && state.getSymName().ends_with(".grad_acc");
}

/// ZeRO-2 and 3 under dist-autodiff's accumulation-steps, in
/// @train_microbatch: each micro-batch's gradient is reduce-scattered
/// (mean over the replicas) and added to this rank's block of the
/// accumulator (`<weight>.grad_acc`, read as that block), as DeepSpeed's
/// stage 2 does; under ZeRO-3 the weights it reads are this rank's blocks,
/// gathered where read (zero::weightAsBlock).
LogicalResult shardAccumulators(func::FuncOp func, ArrayRef<int64_t> group,
                                int64_t stage) {
  OpBuilder b(func.getContext());
  SmallVector<graph::StateOp> accumulators;
  llvm::StringMap<SmallVector<graph::WeightOp>> weights;
  func.walk([&](Operation *op) {
    if (isAccumulator(op))
      accumulators.push_back(cast<graph::StateOp>(op));
    else if (auto w = dyn_cast<graph::WeightOp>(op))
      weights[w.getSymName()].push_back(w);
  });
  for (graph::StateOp st : accumulators) {
    auto add = st->hasOneUse()
                   ? dyn_cast<graph::BinaryOp>(*st->getUsers().begin())
                   : graph::BinaryOp();
    if (!add || add.getKind() != graph::BinaryKind::Add ||
        add.getType() != st.getType())
      return st.emitOpError()
             << "is a gradient accumulator that ZeRO stage " << stage
             << " cannot shard: it must be read once, by the add of a "
                "micro-batch's gradient (dist-autodiff's form); use zero=1";
    unsigned other = add.getOperand(0) == st.getResult() ? 1 : 0;
    b.setInsertionPoint(add);
    Value part = zero::reduceScatterMean(b, add.getLoc(),
                                         add.getOperand(other), group,
                                         "backward");
    zero::markBlock(st, group);
    add->setOperand(other, part);
    add.getResult().setType(st.getType());
    if (stage < 3)
      continue;
    StringRef weight = st.getSymName().drop_back(StringRef(".grad_acc").size());
    for (graph::WeightOp w : weights.lookup(weight))
      if (failed(zero::weightAsBlock(w, group)))
        return failure();
  }
  return success();
}

/// All-reduces (mean over the world) the gradient operands \p grads right
/// after the op that makes each, in buckets: in the order they are made,
/// gradients of one element type join a bucket while it stays within
/// \p bucketBytes (one at least that large is reduced alone; 0: all
/// alone). A bucket of several is one all-reduce of their flattened
/// concatenation, right after its last member is made; each update reads
/// its gradient back through a slice right before it. PyTorch DDP's
/// buckets: fewer collectives (a bias alone pays a collective's latency),
/// each started as soon as its gradients are ready.
void reduceInBuckets(OpBuilder &b, ArrayRef<OpOperand *> grads,
                     int64_t bucketBytes, StringRef phase) {
  if (grads.empty())
    return;
  Block *block = grads.front()->getOwner()->getBlock();
  SmallVector<Value> made;
  DenseMap<Value, SmallVector<OpOperand *>> readers;
  for (OpOperand *g : grads) {
    if (!readers.count(g->get()))
      made.push_back(g->get());
    readers[g->get()].push_back(g);
  }
  // Made order: arguments first, then by their ops' order.
  auto rank = [](Value v) -> std::pair<Operation *, unsigned> {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return {nullptr, arg.getArgNumber()};
    return {v.getDefiningOp(), cast<OpResult>(v).getResultNumber()};
  };
  llvm::stable_sort(made, [&](Value x, Value y) {
    auto [ox, kx] = rank(x);
    auto [oy, ky] = rank(y);
    if (ox != oy)
      return !ox || (oy && ox->isBeforeInBlock(oy));
    return kx < ky;
  });
  auto bytesOf = [](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
  };
  SmallVector<SmallVector<Value>> buckets;
  int64_t filled = 0;
  for (Value g : made) {
    int64_t n = bytesOf(g);
    bool joins =
        !buckets.empty() && n < bucketBytes && filled + n <= bucketBytes &&
        getElementTypeOrSelf(buckets.back().front()) == getElementTypeOrSelf(g);
    if (!joins) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(g);
    filled += n;
  }
  auto tag = [&](Operation *op, StringRef p) {
    op->setAttr("graph.phase", b.getStringAttr(p));
    return op->getResult(0);
  };
  for (ArrayRef<Value> bucket : buckets) {
    Value last = bucket.back();
    if (isa<BlockArgument>(last))
      b.setInsertionPointToStart(block);
    else
      b.setInsertionPointAfter(last.getDefiningOp());
    Location loc = last.getLoc();
    auto reduce = [&](Value v) {
      return reduceHere(b, loc, v, dist::ReductionKind::mean, phase);
    };
    if (bucket.size() == 1) {
      Value r = reduce(last);
      for (OpOperand *use : readers[last])
        use->set(r);
      continue;
    }
    Type elem = getElementTypeOrSelf(last);
    auto flat = [&](int64_t n) { return RankedTensorType::get({n}, elem); };
    SmallVector<Value> parts;
    int64_t total = 0;
    for (Value g : bucket) {
      int64_t n = cast<RankedTensorType>(g.getType()).getNumElements();
      parts.push_back(
          cast<RankedTensorType>(g.getType()).getRank() == 1
              ? g
              : tag(graph::ReshapeOp::create(b, loc, flat(n), g), phase));
      total += n;
    }
    Value all = reduce(tag(graph::ConcatOp::create(b, loc, flat(total), parts,
                                                   b.getI64IntegerAttr(0)),
                           phase));
    int64_t offset = 0;
    for (Value g : bucket) {
      auto t = cast<RankedTensorType>(g.getType());
      int64_t n = t.getNumElements();
      for (OpOperand *use : readers[g]) {
        b.setInsertionPoint(use->getOwner());
        Location at = use->getOwner()->getLoc();
        Value part =
            tag(graph::SliceOp::create(
                    b, at, flat(n), all, b.getDenseI64ArrayAttr({offset}),
                    b.getDenseI64ArrayAttr({offset + n}),
                    b.getDenseI64ArrayAttr({0}), b.getDenseI64ArrayAttr({1})),
                "optimizer");
        if (t.getRank() != 1)
          part = tag(graph::ReshapeOp::create(b, at, t, part), "optimizer");
        use->set(part);
      }
      offset += n;
    }
  }
}

/// @train_apply under ZeRO-2 and 3: the gradient \p grad of \p update is
/// an accumulator that @train_microbatch holds as this rank's block (read
/// directly, or through the mixed-precision graph.unscale): read it as that
/// block too.
LogicalResult readAccumulatorBlock(Operation *update, OpOperand &grad,
                                   ArrayRef<int64_t> group) {
  Value g = grad.get();
  Operation *def = g.getDefiningOp();
  if (isAccumulator(def)) {
    zero::markBlock(def, group);
    return success();
  }
  if (auto unscale = dyn_cast_if_present<graph::UnscaleOp>(def)) {
    unsigned k = cast<OpResult>(g).getResultNumber();
    Operation *acc = unscale.getGrads()[k].getDefiningOp();
    if (isAccumulator(acc)) {
      zero::markBlock(acc, group);
      g.setType(acc->getResult(0).getType());
      return success();
    }
  }
  return update->emitOpError()
         << "reads a gradient that is not an accumulator of "
            "@train_microbatch (operand #1); ZeRO stages 2 and 3 shard the "
            "accumulators under accumulation-steps; use zero=1";
}

/// Averages the gradient of every optimizer update; a mixed-precision
/// overflow flag (`skip`) is or-ed over the world so ranks skip together.
/// With a \p zeroGroup (ZeRO over those devices) each update runs on this
/// rank's shard instead (zero::shardUpdate). ZeRO-1 reduce-scatters the
/// gradient where the update reads it; ZeRO-2 (stage >= 2) right after
/// the backward computed it, so the whole gradient dies there and only the
/// shard lives on to the optimizer; ZeRO-3 (stage 3) shards the weights.
/// Without ZeRO and with \p overlap (the plan's grad_overlap) gradients are
/// all-reduced right after the ops that made them, in buckets of up to
/// \p bucketBytes (reduceInBuckets), so their reduction can run under the
/// rest of the backward.
LogicalResult reduceGradients(func::FuncOp func, ArrayRef<int64_t> zeroGroup,
                              int64_t stage, bool overlap,
                              int64_t bucketBytes) {
  bool shardEarly = stage >= 2;
  // @train_apply under ZeRO-2 and 3: the accumulators already are blocks
  // (shardAccumulators).
  bool accumulated = roleOf(func) == "apply";
  OpBuilder b(func.getContext());
  DenseMap<Value, Value> skipOf;
  auto reduceSkip = [&](Operation *user, Value skip) -> Value {
    if (!skip || isReduced(skip))
      return skip;
    auto it = skipOf.find(skip);
    if (it != skipOf.end())
      return it->second;
    // Right after the flag is made, so every reader sees the world's flag.
    Operation *def = skip.getDefiningOp();
    Value reduced = reduceBefore(b, def ? def->getNextNode() : user, skip,
                                 dist::ReductionKind::max);
    skip.replaceAllUsesExcept(reduced, reduced.getDefiningOp());
    skipOf[skip] = reduced;
    return reduced;
  };
  SmallVector<Operation *> updates;
  func.walk([&](Operation *op) {
    if (isa<graph::SgdUpdateOp, graph::AdamUpdateOp>(op))
      updates.push_back(op);
  });
  SmallVector<OpOperand *> early;
  for (Operation *op : updates) {
    // Operand 1 of both updates is the gradient.
    OpOperand &grad = op->getOpOperand(1);
    if (auto sgd = dyn_cast<graph::SgdUpdateOp>(op))
      reduceSkip(op, sgd.getSkip());
    else if (auto adam = dyn_cast<graph::AdamUpdateOp>(op))
      reduceSkip(op, adam.getSkip());
    if (!zeroGroup.empty()) {
      if (shardEarly && accumulated) {
        if (failed(readAccumulatorBlock(op, grad, zeroGroup)))
          return failure();
      } else if (shardEarly) {
        b.setInsertionPointAfterValue(grad.get());
        grad.set(zero::reduceScatterMean(b, op->getLoc(), grad.get(),
                                         zeroGroup, "backward"));
      }
      if (failed(zero::shardUpdate(op, zeroGroup, /*gradIsShard=*/shardEarly,
                                   /*replacements=*/nullptr,
                                   /*paramIsShard=*/stage >= 3)))
        return failure();
    } else if (!isReduced(grad.get())) {
      // With overlap, in buckets right after the backward made them, where
      // the printer starts them while the rest of the backward runs
      // (emit.async); else before the update.
      if (overlap && grad.get().getParentBlock() == op->getBlock())
        early.push_back(&grad);
      else
        grad.set(reduceBefore(b, op, grad.get(), dist::ReductionKind::mean));
    }
  }
  reduceInBuckets(b, early, bucketBytes,
                  accumulated ? "optimizer" : "backward");
  return success();
}

/// @train_apply under ZeRO-2 and 3 returns zeros for each accumulator it
/// consumed: a block of zeros now, as the accumulators are blocks.
void resetAccumulatorBlocks(func::FuncOp func) {
  Operation *ret = func.getBody().front().getTerminator();
  DenseMap<StringRef, Type> blockType;
  func.walk([&](graph::StateOp st) {
    if (isAccumulator(st))
      blockType[st.getSymName()] = st.getType();
  });
  OpBuilder b(ret);
  for (unsigned k = 0; k < func.getNumResults(); ++k) {
    auto name = func.getResultAttrOfType<StringAttr>(k, "graph.update");
    Type type = name ? blockType.lookup(name.getValue()) : Type();
    auto zeros = ret->getOperand(k).getDefiningOp<graph::ConstantOp>();
    auto splat = zeros ? dyn_cast<SplatElementsAttr>(zeros.getValue())
                       : SplatElementsAttr();
    if (!type || !splat || ret->getOperand(k).getType() == type)
      continue;
    auto block = graph::ConstantOp::create(
        b, zeros.getLoc(),
        SplatElementsAttr::get(cast<ShapedType>(type),
                               splat.getSplatValue<Attribute>()));
    block->setDiscardableAttrs(zeros->getDiscardableAttrDictionary());
    ret->setOperand(k, block.getResult());
    if (zeros->use_empty())
      zeros->erase();
  }
}

/// Averages every scalar floating result named by `graph.output` (the loss)
/// and marks the batch inputs as split across ranks.
void reduceLossAndShardInputs(func::FuncOp func) {
  OpBuilder b(func.getContext());
  Operation *ret = func.getBody().front().getTerminator();
  for (unsigned k = 0; k < func.getNumResults(); ++k) {
    if (!func.getResultAttr(k, "graph.output"))
      continue;
    Value v = ret->getOperand(k);
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getNumElements() != 1 ||
        !isa<FloatType>(t.getElementType()) || isReduced(v))
      continue;
    ret->setOperand(
        k, reduceBefore(b, ret, v, dist::ReductionKind::mean, "forward"));
  }
  for (BlockArgument arg : func.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (t && t.getRank() >= 1)
      func.setArgAttr(arg.getArgNumber(), "dist.batch_shard",
                      UnitAttr::get(func.getContext()));
  }
}

/// ZeRO's stage and the replicas it shards over.
struct ZeroConfig {
  int64_t stage = 0, replicas = 0;
};

/// The per-replica rows of \p func's batch (its first argument of rank >=
/// 1); 0 without one. (Gradient accumulation repeats those rows, it does
/// not add samples: dist-compile's programs run each micro-batch on the
/// inputs given.)
int64_t rowsPerReplica(func::FuncOp func) {
  for (Type t : func.getArgumentTypes())
    if (auto r = dyn_cast<RankedTensorType>(t);
        r && r.getRank() >= 1 && r.hasStaticShape())
      return r.getDimSize(0);
  return 0;
}

struct DataParallelPass
    : public distopt::impl::DataParallelPassBase<DataParallelPass> {
  using DataParallelPassBase::DataParallelPassBase;

  /// ZeRO from the options, else from a data-parallel plan of the module.
  FailureOr<ZeroConfig> zeroConfig(ModuleOp module,
                                   ArrayRef<func::FuncOp> funcs) {
    dist::PlanAttr plan = dataParallelPlan(module);
    ZeroConfig c;
    c.stage = zeroStage >= 0 ? zeroStage : plan ? plan.getZero() : 0;
    c.replicas = replicas ? replicas : plan ? plan.getDp() : 0;
    if (zeroStage < -1 || c.stage > 3)
      return module.emitError()
             << "dist-data-parallel: zero="
             << (zeroStage < -1 ? static_cast<int64_t>(zeroStage) : c.stage)
             << " is not a ZeRO stage; use 0 (replicated optimizer state), "
                "1 (sharded over the replicas), 2 (gradients sharded too) or "
                "3 (parameters sharded too)";
    if (plan && replicas && plan.getDp() != replicas)
      return module.emitError()
             << "dist-data-parallel: dp=" << static_cast<unsigned>(replicas)
             << " but the module's plan has dp=" << plan.getDp()
             << "; give the plan's dp or leave the option out";
    if (plan && !replicas) {
      // The plan's global batch is what the replicas train on together.
      for (func::FuncOp f : funcs) {
        int64_t rows = rowsPerReplica(f);
        if (roleOf(f) == "apply" || !rows ||
            rows * plan.getDp() == plan.getGlobalBatch())
          continue;
        return f.emitError()
               << "dist-data-parallel: @" << f.getSymName() << " takes "
               << rows << " row(s) per replica, so the plan's "
               << plan.getDp() << " replicas train " << rows * plan.getDp()
               << " but the plan's global batch is "
               << plan.getGlobalBatch()
               << "; compile for " << plan.getGlobalBatch() / plan.getDp()
               << " rows per replica (--input-shape) or plan with "
                  "--dist-batch="
               << rows * plan.getDp();
      }
    }
    if (c.stage == 0)
      return c;
    if (c.replicas < 2)
      return module.emitError()
             << "dist-data-parallel: zero=" << c.stage
             << " shards the optimizer state over "
                "the data-parallel replicas, so their number must be known "
                "when compiling (the shards' shapes depend on it); give dp=N "
                "with N >= 2, or plan the module with dp >= 2 "
                "(--dist-plan=dp=2,zero="
             << c.stage << ")";
    return c;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    module.walk([&](func::FuncOp f) {
      if (!roleOf(f).empty())
        funcs.push_back(f);
    });
    if (funcs.empty()) {
      module.emitError()
          << "dist-data-parallel: no training function (@train_step, or "
             "@train_microbatch and @train_apply, marked graph.train); run "
             "--dist-autodiff first";
      return signalPassFailure();
    }
    FailureOr<ZeroConfig> zero = zeroConfig(module, funcs);
    if (failed(zero))
      return signalPassFailure();
    dist::PlanAttr plan = dataParallelPlan(module);
    bool overlap = !plan || plan.getOverlapGradSync();
    SmallVector<int64_t> zeroGroup;
    for (int64_t d = 0; zero->stage >= 1 && d < zero->replicas; ++d)
      zeroGroup.push_back(d);
    MLIRContext *ctx = module.getContext();
    for (func::FuncOp f : funcs) {
      if (f->hasAttr("dist.data_parallel"))
        continue; // already done: the pass is idempotent
      StringRef role = roleOf(f);
      if (role != "step" && role != "microbatch" && role != "apply") {
        f.emitError() << "dist-data-parallel: @" << f.getSymName()
                      << " has graph.train role '" << role
                      << "'; expected step, microbatch or apply (rerun "
                         "--dist-autodiff)";
        return signalPassFailure();
      }
      if (role != "microbatch" &&
          failed(
              reduceGradients(f, zeroGroup, zero->stage, overlap, bucketBytes)))
        return signalPassFailure();
      if (role == "microbatch" && zero->stage >= 2 &&
          failed(shardAccumulators(f, zeroGroup, zero->stage)))
        return signalPassFailure();
      if (role == "apply" && zero->stage >= 2)
        resetAccumulatorBlocks(f);
      if (role != "apply")
        reduceLossAndShardInputs(f);
      // Each replica draws its block of the masks one process draws for the
      // whole batch (its rows are that block of every batch-major tensor).
      f.walk([&](graph::DropoutMaskOp m) {
        dist::DistDialect::BatchBlockAttrHelper(ctx).setAttr(
            m, UnitAttr::get(ctx));
      });
      f->setAttr("dist.data_parallel", UnitAttr::get(ctx));
      if (!zeroGroup.empty()) {
        // The state results now carry this rank's shards.
        zero::setResultTypes(f);
        Builder b(ctx);
        dist::DistDialect::ZeroAttrHelper(ctx).setAttr(
            f, b.getDictionaryAttr(
                   {b.getNamedAttr("stage", b.getI64IntegerAttr(zero->stage)),
                    b.getNamedAttr("replicas",
                                   b.getI64IntegerAttr(zero->replicas))}));
      }
    }
  }
};

} // namespace
