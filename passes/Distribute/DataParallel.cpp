//===- DataParallel.cpp - The dist-data-parallel pass -----------*- C++ -*-===//
//
// Part of DistOpt. Makes the training functions of dist-autodiff data
// parallel: every rank runs the same program on its own rows of the batch,
// gradients are averaged over the world right before the optimizer reads
// them, and the returned loss is the world's mean. docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace distopt {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "passes/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

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

/// `value` averaged (or combined by `kind`) over every rank, computed right
/// before `user`.
Value reduceBefore(OpBuilder &b, Operation *user, Value value,
                   dist::ReductionKind kind, StringRef phase = "optimizer") {
  b.setInsertionPoint(user);
  auto op = dist::AllReduceOp::create(
      b, user->getLoc(), value.getType(), value,
      dist::ReductionKindAttr::get(b.getContext(), kind),
      b.getDenseI64ArrayAttr({}));
  op->setAttr("graph.phase", b.getStringAttr(phase));
  return op.getResult();
}

bool isReduced(Value v) {
  return v.getDefiningOp<dist::AllReduceOp>() != nullptr;
}

/// Averages the gradient of every optimizer update; a mixed-precision
/// overflow flag (`skip`) is or-ed over the world so ranks skip together.
void reduceGradients(func::FuncOp func) {
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
  for (Operation *op : updates) {
    if (auto sgd = dyn_cast<graph::SgdUpdateOp>(op)) {
      if (!isReduced(sgd.getGrad()))
        sgd.getGradMutable().assign(reduceBefore(
            b, op, sgd.getGrad(), dist::ReductionKind::mean));
      reduceSkip(op, sgd.getSkip());
    } else if (auto adam = dyn_cast<graph::AdamUpdateOp>(op)) {
      if (!isReduced(adam.getGrad()))
        adam.getGradMutable().assign(reduceBefore(
            b, op, adam.getGrad(), dist::ReductionKind::mean));
      reduceSkip(op, adam.getSkip());
    }
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

struct DataParallelPass
    : public distopt::impl::DataParallelPassBase<DataParallelPass> {
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
      if (role != "microbatch")
        reduceGradients(f);
      if (role != "apply")
        reduceLossAndShardInputs(f);
      f->setAttr("dist.data_parallel", UnitAttr::get(f.getContext()));
    }
  }
};

} // namespace
