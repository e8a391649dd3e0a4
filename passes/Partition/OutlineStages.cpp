//===- OutlineStages.cpp - The dist-outline-stages pass ---------*- C++ -*-===//
//
// Part of DistOpt. Turns the planner's per-op `dist.virtual_stage` annotations into
// `dist.stage` regions: one region per virtual pipeline stage, in stage
// order, on the devices of its pipeline rank. Values crossing stages become
// stage inputs and `dist.yield`ed results. docs/partition.md has the rules.
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/StagePlacement.h"
#include "passes/Passes.h"
#include "passes/Planning/Branches.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"

#include "mlir/IR/IRMapping.h"

namespace distopt {
#define GEN_PASS_DEF_OUTLINESTAGESPASS
#include "passes/Partition/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::partition;

namespace {
/// One function to outline, analysed before anything changes.
struct Job {
  func::FuncOp func;
  dist::PlanAttr plan;
  StagePlacement placement;
};
} // namespace

/// Builds the stage regions of one analysed function and erases the
/// original ops.
static void rewrite(const Job &job) {
  func::FuncOp func = job.func;
  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  const StagePlacement &placement = job.placement;
  int64_t numStages = job.plan.getNumVirtualStages(), last = numStages - 1;

  SmallVector<SmallVector<Operation *>> stageOps(numStages);
  for (Operation &op : body.without_terminator())
    for (int64_t s : placement.stages.lookup(&op))
      stageOps[s].push_back(&op);

  auto definedIn = [&](Value value, int64_t s) {
    Operation *def = value.getDefiningOp();
    return def && llvm::is_contained(placement.stages.lookup(def), s);
  };
  // What each stage reads from outside (function arguments or earlier
  // stages), in first-use order.
  SmallVector<SetVector<Value>> needs(numStages);
  for (int64_t s = 0; s < numStages; ++s)
    for (Operation *op : stageOps[s])
      for (Value value : usedValues(op))
        if (!definedIn(value, s))
          needs[s].insert(value);
  for (Value value : ret->getOperands())
    if (!definedIn(value, last))
      needs[last].insert(value);

  // Values flow stage to stage: one that stage u makes and a stage after
  // u + 1 reads passes through every stage in between (an input it yields
  // unchanged), so every boundary is between neighbouring stages, as the
  // schedule's sends and receives are.
  for (int64_t s = numStages - 1; s > 0; --s)
    for (Value value : needs[s]) {
      Operation *def = value.getDefiningOp();
      if (def && placement.stages.lookup(def).front() < s - 1)
        needs[s - 1].insert(value);
    }

  // What each stage yields: what the next stage reads from it, and for the
  // last stage the function's results.
  SmallVector<SetVector<Value>> yields(numStages);
  for (int64_t s = 0; s + 1 < numStages; ++s)
    for (Value value : needs[s + 1])
      if (value.getDefiningOp())
        yields[s].insert(value);
  for (Value value : ret->getOperands())
    yields[last].insert(value);

  OpBuilder b(ret);
  DenseMap<Value, Value> outside; // original value -> stage result
  dist::StageOp lastStage;
  for (int64_t s = 0; s < numStages; ++s) {
    SmallVector<Value> inputs;
    for (Value value : needs[s])
      inputs.push_back(isa<BlockArgument>(value) ? value
                                                 : outside.lookup(value));
    SmallVector<Type> resultTypes;
    for (Value value : yields[s])
      resultTypes.push_back(value.getType());
    dist::MeshAttr mesh = job.plan.getStageMesh(s);
    Location loc =
        stageOps[s].empty() ? func.getLoc() : stageOps[s].front()->getLoc();
    auto stage = dist::StageOp::create(b, loc, resultTypes, s, mesh, inputs);

    Block &stageBody = stage.getBody().front();
    IRMapping map;
    map.map(needs[s].getArrayRef(), stageBody.getArguments());
    OpBuilder inner = OpBuilder::atBlockTerminator(&stageBody);
    for (Operation *op : stageOps[s]) {
      Operation *copy = inner.clone(*op, map);
      copy->removeAttr(kStageAttr);
    }
    SmallVector<Value> yielded;
    for (Value value : yields[s])
      yielded.push_back(map.lookup(value));
    stageBody.getTerminator()->setOperands(yielded);
    for (auto [value, result] : llvm::zip(yields[s], stage.getResults()))
      outside[value] = result;
    lastStage = stage;
  }

  // The function's results come from the last stage.
  ArrayRef<Value> lastYields = yields[last].getArrayRef();
  SmallVector<Value> results;
  for (Value value : ret->getOperands())
    results.push_back(lastStage.getResult(llvm::find(lastYields, value) -
                                          lastYields.begin()));
  ret->setOperands(results);

  // Users come after their operands, so erasing backwards never leaves a
  // dangling use.
  SmallVector<Operation *> originals;
  for (Operation &op : body.without_terminator())
    if (!isa<dist::StageOp>(op))
      originals.push_back(&op);
  for (Operation *op : llvm::reverse(originals))
    op->erase();
}

/// Outlines every annotated function of \p module; fails, with the IR
/// unchanged, on the first inconsistency.
static LogicalResult outlineStages(ModuleOp module) {
  module.getContext()->getOrLoadDialect<dist::DistDialect>();
  SmallVector<Job> jobs;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !hasStageAnnotations(func))
      continue;
    for (Operation &op : func.getBody().front())
      if (isa<dist::StageOp>(op))
        return func.emitError("function @")
               << func.getSymName()
               << " already has 'dist.stage' regions and also ops annotated "
                  "with '"
               << kStageAttr
               << "' outside them; outline once, on the IR the planner "
                  "wrote";
    FailureOr<dist::PlanAttr> plan = readPlan(module, func);
    if (failed(plan))
      return failure();
    FailureOr<StagePlacement> placement = placeOps(func, *plan);
    if (failed(placement))
      return failure();
    jobs.push_back({func, *plan, std::move(*placement)});
  }
  for (const Job &job : jobs)
    rewrite(job);
  return success();
}

namespace {
struct OutlineStagesPass
    : public distopt::impl::OutlineStagesPassBase<OutlineStagesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(planning::rejectBranchPlacement(getOperation(),
                                               "dist-outline-stages")) ||
        failed(outlineStages(getOperation())))
      signalPassFailure();
  }
};
} // namespace
