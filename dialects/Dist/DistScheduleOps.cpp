//===- DistScheduleOps.cpp - Pipeline schedules as IR ------------*- C++ -*-===//
//
// Part of DistOpt. Verifiers of the schedule ops and their conversion to the
// cost core's actions. What one op can check alone is checked here; what
// takes every list (dependencies, matching sends and receives, deadlock
// freedom, memory) is dist-verify-schedule's.
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::dist;

/// The plan of the module enclosing \p op, if any.
static PlanAttr planOf(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  return module ? DistDialect::PlanAttrHelper(op->getContext()).getAttr(module)
                : PlanAttr();
}

/// The pipeline stage that list (pipeline rank or slot) \p list runs.
static int64_t stageOfList(PlanAttr plan, int64_t list) {
  schedule::RankLayout layout = plan.getLayout();
  if (!layout.replicated())
    return list;
  std::optional<schedule::RankLayout::Coord> c =
      layout.coordOf(static_cast<unsigned>(list) * layout.tp);
  return c ? c->stage : -1;
}

/// Number of action lists the plan has: pipeline ranks, or slots.
static int64_t numLists(PlanAttr plan) {
  schedule::RankLayout layout = plan.getLayout();
  return layout.replicated() ? static_cast<int64_t>(layout.numSlots())
                             : layout.pp;
}

LogicalResult ScheduleOp::verify() {
  schedule::ScheduleKind kind;
  if (getKind() != "forward" && !schedule::parseScheduleKind(getKind(), kind))
    return emitOpError("unknown schedule kind \"")
           << getKind()
           << "\"; expected \"forward\" (an inference stream) or a training "
              "schedule ("
           << schedule::scheduleNameList() << ")";
  // The I64Attr getters read unsigned: a negative count or index would
  // pass a `< 0` check, so the verifiers read the attributes' signed values.
  const int64_t microbatches = getMicrobatchesAttr().getInt();
  if (microbatches < 1)
    return emitOpError("needs at least one micro-batch, got ") << microbatches;
  int64_t expected = 0;
  for (Operation &op : getBody().front()) {
    auto list = dyn_cast<ActionsOp>(op);
    if (!list)
      return op.emitOpError("cannot be in a dist.schedule; it holds only "
                            "dist.actions lists");
    if (list.getRankAttr().getInt() != expected)
      return list.emitOpError("is list ")
             << list.getRankAttr().getInt() << " but comes where list "
             << expected << " belongs; the lists are in rank order from 0";
    ++expected;
  }
  if (PlanAttr plan = planOf(*this)) {
    if (expected != numLists(plan))
      return emitOpError("has ")
             << expected << " action lists but the plan has " << numLists(plan)
             << (plan.getReplicas().empty() ? " pipeline ranks"
                                            : " stage slots");
    if (microbatches != plan.getMicrobatches())
      return emitOpError("runs ")
             << microbatches << " micro-batches but the plan has "
             << plan.getMicrobatches();
  }
  return success();
}

LogicalResult
ScheduleOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto func = symbolTable.lookupNearestSymbolFrom<func::FuncOp>(
      *this, getFunctionAttr());
  if (!func)
    return emitOpError("schedules @")
           << getFunction() << ", which is not a function of the module";
  return success();
}

LogicalResult ActionsOp::verify() {
  if (getRankAttr().getInt() < 0)
    return emitOpError("rank must be non-negative, got ")
           << getRankAttr().getInt();
  for (Operation &op : getBody().front())
    if (!isa<ActionOpInterface>(op))
      return op.emitOpError("is not a schedule action; a dist.actions list "
                            "holds forward, backward, transfer, gradient "
                            "sync and optimizer actions only");
  return success();
}

//===----------------------------------------------------------------------===//
// Compute actions
//===----------------------------------------------------------------------===//

/// The virtual stage of \p callee (`dist.virtual_stage` on the function).
static std::optional<int64_t> stageOfFunction(func::FuncOp callee) {
  if (auto v = DistDialect::VirtualStageAttrHelper(callee.getContext())
                   .getAttr(callee))
    return v.getInt();
  return std::nullopt;
}

/// Checks that \p op's stage function exists, is a stage, and belongs to
/// the pipeline stage of its list.
static LogicalResult verifyStageUse(Operation *op, FlatSymbolRefAttr stage,
                                    SymbolTableCollection &symbolTable) {
  auto callee = symbolTable.lookupNearestSymbolFrom<func::FuncOp>(op, stage);
  if (!callee)
    return op->emitOpError("runs @")
           << stage.getValue() << ", which is not a function of the module";
  std::optional<int64_t> v = stageOfFunction(callee);
  if (!v)
    return op->emitOpError("runs @")
           << stage.getValue()
           << ", which is not a stage function (it has no "
              "'dist.virtual_stage'; dist-outline-stage-functions makes them)";
  PlanAttr plan = planOf(op);
  auto list = op->getParentOfType<ActionsOp>();
  if (plan && list) {
    int64_t s = stageOfList(plan, list.getRank());
    if (*v >= plan.getNumVirtualStages() || *v % plan.getPp() != s)
      return op->emitOpError("runs virtual stage ")
             << *v << " (@" << stage.getValue() << ") on list "
             << list.getRank() << ", which runs pipeline stage " << s
             << "; virtual stage v runs on pipeline stage v mod pp = v mod "
             << plan.getPp();
  }
  return success();
}

/// The action of a compute op: its chunk is the stage function's virtual
/// stage divided by pp.
static schedule::Action computeAction(Operation *op, schedule::ActionKind kind,
                                      FlatSymbolRefAttr stage,
                                      int64_t microbatch) {
  int chunk = 0;
  if (PlanAttr plan = planOf(op))
    if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            op, stage))
      if (std::optional<int64_t> v = stageOfFunction(callee))
        chunk = static_cast<int>(*v / plan.getPp());
  return schedule::Action(kind, static_cast<int>(microbatch), chunk);
}

#define DIST_COMPUTE_ACTION(Op, Kind)                                          \
  schedule::Action Op::getAction() {                                           \
    return computeAction(*this, schedule::ActionKind::Kind, getStageAttr(),    \
                         getMicrobatch());                                     \
  }                                                                            \
  LogicalResult Op::verifySymbolUses(SymbolTableCollection &symbolTable) {     \
    if (getMicrobatchAttr().getInt() < 0)                                      \
      return emitOpError("micro-batch must be non-negative, got ")             \
             << getMicrobatchAttr().getInt();                                  \
    return verifyStageUse(*this, getStageAttr(), symbolTable);                 \
  }
DIST_COMPUTE_ACTION(ForwardOp, Forward)
DIST_COMPUTE_ACTION(BackwardOp, Backward)
DIST_COMPUTE_ACTION(BackwardInputOp, BackwardInput)
DIST_COMPUTE_ACTION(BackwardWeightOp, BackwardWeight)
#undef DIST_COMPUTE_ACTION

//===----------------------------------------------------------------------===//
// Transfers and per-iteration actions
//===----------------------------------------------------------------------===//

static LogicalResult verifyChunk(Operation *op, int64_t chunk) {
  if (chunk < 0 || chunk > 127)
    return op->emitOpError("chunk must be in [0, 127], got ") << chunk;
  if (PlanAttr plan = planOf(op))
    if (chunk >= plan.getChunks())
      return op->emitOpError("chunk ")
             << chunk << " is out of range: the plan has " << plan.getChunks()
             << " chunk(s) per stage";
  return success();
}

static LogicalResult verifyTransfer(Operation *op, int64_t microbatch,
                                    int64_t chunk, int64_t peer) {
  if (microbatch < 0)
    return op->emitOpError("micro-batch must be non-negative, got ")
           << microbatch;
  if (peer < 0 || peer > 32767)
    return op->emitOpError("peer rank must be in [0, 32767], got ") << peer;
  if (PlanAttr plan = planOf(op))
    if (peer >= numLists(plan))
      return op->emitOpError("peer rank ")
             << peer << " is out of range: the plan has " << numLists(plan)
             << " action lists";
  return verifyChunk(op, chunk);
}

#define DIST_TRANSFER_ACTION(Op, Kind)                                         \
  schedule::Action Op::getAction() {                                           \
    return schedule::Action(schedule::ActionKind::Kind,                        \
                            static_cast<int>(getMicrobatch()),                 \
                            static_cast<int>(getChunk()),                      \
                            static_cast<int>(getPeer()));                      \
  }                                                                            \
  LogicalResult Op::verify() {                                                 \
    return verifyTransfer(*this, getMicrobatch(), getChunk(), getPeer());      \
  }
DIST_TRANSFER_ACTION(SendActivationOp, SendActivation)
DIST_TRANSFER_ACTION(RecvActivationOp, RecvActivation)
DIST_TRANSFER_ACTION(SendGradOp, SendGrad)
DIST_TRANSFER_ACTION(RecvGradOp, RecvGrad)
#undef DIST_TRANSFER_ACTION

/// The optional micro-batch of a per-iteration action (PipeDream's syncs
/// and updates after each micro-batch).
static LogicalResult verifyMicrobatch(Operation *op,
                                      std::optional<uint64_t> microbatch) {
  if (microbatch && static_cast<int64_t>(*microbatch) < 0)
    return op->emitOpError("micro-batch must be non-negative, got ")
           << static_cast<int64_t>(*microbatch);
  return success();
}

static int microbatchOr(std::optional<uint64_t> microbatch) {
  return microbatch ? static_cast<int>(*microbatch) : -1;
}

#define DIST_CHUNK_ACTION(Op, Kind)                                            \
  schedule::Action Op::getAction() {                                           \
    return schedule::Action(schedule::ActionKind::Kind,                        \
                            microbatchOr(getMicrobatch()),                     \
                            static_cast<int>(getChunk()));                     \
  }                                                                            \
  LogicalResult Op::verify() {                                                 \
    if (failed(verifyMicrobatch(*this, getMicrobatch())))                      \
      return failure();                                                        \
    return verifyChunk(*this, getChunk());                                     \
  }
DIST_CHUNK_ACTION(GradAllReduceOp, AllReduce)
DIST_CHUNK_ACTION(GradReduceScatterOp, ReduceScatter)
DIST_CHUNK_ACTION(ParamAllGatherOp, AllGather)
#undef DIST_CHUNK_ACTION

schedule::Action OptimizerStepOp::getAction() {
  return schedule::Action(schedule::ActionKind::OptimizerStep,
                          microbatchOr(getMicrobatch()));
}

LogicalResult OptimizerStepOp::verify() {
  return verifyMicrobatch(*this, getMicrobatch());
}
