//===- StagePlacement.cpp - The pipeline stage of each op -------*- C++ -*-===//
//
// Part of DistOpt. Reads the plan's degrees, places unannotated ops with
// their users, decides which ops are cloned, and checks that no value flows
// from a later stage to an earlier one. See docs/partition.md.
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/StagePlacement.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::partition;

FailureOr<dist::PlanAttr> partition::readPlan(ModuleOp module,
                                              func::FuncOp func) {
  auto plan = dist::DistDialect::PlanAttrHelper(module.getContext())
                  .getAttr(module);
  if (!plan)
    return func.emitError("function @")
           << func.getSymName() << " has ops annotated with '" << kStageAttr
           << "' but the module has no 'dist.plan'; plan the module first "
              "(dist-opt --dist-cluster=... --dist-plan=... or --dist-search) "
              "so that the stages have devices";
  return plan;
}

bool partition::hasStageAnnotations(func::FuncOp func) {
  for (Block &block : func.getBody())
    for (Operation &op : block)
      if (op.hasAttr(kStageAttr))
        return true;
  return false;
}

SetVector<Value> partition::usedValues(Operation *op) {
  SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
  if (op->getNumRegions() != 0)
    getUsedValuesDefinedAbove(op->getRegions(), used);
  return used;
}

/// Elements of a shaped type, dynamic dimensions counted as 1 (the rule of
/// the cost interface).
static double numElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasRank())
    return 1;
  double n = 1;
  for (int64_t d : shaped.getShape())
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

/// Cheap enough to compute once per stage instead of sending: an op without
/// operands (constant, weight or state read, iota) or one doing at most one
/// FLOP per result element (data movement, simple elementwise).
static bool isCheap(Operation *op) {
  if (op->getNumOperands() == 0)
    return true;
  auto flops = dyn_cast<graph::CostOpInterface>(op);
  if (!flops)
    return false;
  double elements = 0;
  for (Type t : op->getResultTypes())
    elements += numElements(t);
  return flops.getFlopCount() <= elements;
}

/// The stages of \p op's users; the function's return counts as the last
/// stage. Users are placed before their operands (reverse walk).
static SmallVector<int64_t> userStages(Operation *op, Block &body,
                                       const StagePlacement &placement,
                                       int64_t lastStage) {
  SmallVector<int64_t> stages;
  for (Operation *user : op->getUsers()) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (!top)
      continue;
    if (top == body.getTerminator()) {
      stages.push_back(lastStage);
      continue;
    }
    auto it = placement.stages.find(top);
    if (it != placement.stages.end())
      llvm::append_range(stages, it->second);
  }
  llvm::sort(stages);
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  return stages;
}

/// The virtual stage `dist.virtual_stage` gives \p op (the dialect's
/// verifier has checked its range against the plan).
static int64_t annotatedStage(Attribute raw) {
  return cast<IntegerAttr>(raw).getInt();
}

/// Checks that every value \p op reads in stage \p w is available there: a
/// function argument, a clone in the same stage, or a value of a stage not
/// after \p w.
static LogicalResult checkOperands(Operation *op, int64_t w,
                                   const StagePlacement &placement) {
  for (Value value : usedValues(op)) {
    Operation *def = value.getDefiningOp();
    if (!def)
      continue;
    auto it = placement.stages.find(def);
    if (it == placement.stages.end())
      continue; // not a top-level op of the body
    ArrayRef<int64_t> defStages = it->second;
    if (placement.cloned.contains(def) && llvm::is_contained(defStages, w))
      continue;
    int64_t u = defStages.front();
    if (u <= w)
      continue;
    InFlightDiagnostic diag = op->emitOpError("in pipeline stage ")
                              << w << " uses a value that stage " << u
                              << " produces";
    if (!op->hasAttr(kStageAttr))
      diag << " (the op has no '" << kStageAttr << "' and goes to stage " << w
           << ", the first stage using it)";
    diag << "; values may only flow to the same or a later stage: fix the '"
         << kStageAttr << "' annotations (or re-run the planner) so that no "
         << "producer's stage is after its user's";
    diag.attachNote(def->getLoc())
        << "the value is produced here, in stage " << u;
    return failure();
  }
  return success();
}

FailureOr<StagePlacement> partition::placeOps(func::FuncOp func,
                                              dist::PlanAttr plan) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("function @")
           << func.getSymName() << " has " << func.getBody().getBlocks().size()
           << " blocks; outlining pipeline stages needs a single-block body";
  Block &body = func.getBody().front();
  int64_t last = plan.getNumVirtualStages() - 1;
  StagePlacement placement;

  // Forward: which unannotated ops may be cloned. Their whole operand slice
  // must be cloneable too, so they never depend on samples (function
  // arguments) or on another stage's work.
  DenseSet<Operation *> cloneable;
  for (Operation &op : body.without_terminator()) {
    if (op.hasAttr(kStageAttr) || op.getNumRegions() != 0 ||
        !isMemoryEffectFree(&op) || !isCheap(&op))
      continue;
    bool ok = llvm::all_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && cloneable.contains(def);
    });
    if (ok)
      cloneable.insert(&op);
  }

  // Backward: annotated ops keep their stage; the others follow their users.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (Attribute raw = op.getAttr(kStageAttr)) {
      placement.stages[&op] = {annotatedStage(raw)};
      continue;
    }
    SmallVector<int64_t> users = userStages(&op, body, placement, last);
    // Ops nobody uses (kept for their effects or left dead) run last.
    if (users.empty())
      users.push_back(last);
    if (cloneable.contains(&op)) {
      placement.cloned.insert(&op);
      placement.stages[&op].assign(users.begin(), users.end());
    } else {
      placement.stages[&op] = {users.front()};
    }
  }

  for (Operation &op : body.without_terminator())
    for (int64_t w : placement.stages[&op])
      if (failed(checkOperands(&op, w, placement)))
        return failure();
  return placement;
}
