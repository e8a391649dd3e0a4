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

int64_t StageGrid::firstSlot(int64_t s) const {
  if (replicas.empty())
    return dp * s;
  int64_t slot = 0;
  for (int64_t r = 0; r < s; ++r)
    slot += replicas[r];
  return slot;
}

SmallVector<int64_t> StageGrid::devices(int64_t v) const {
  int64_t s = pipelineRank(v), first = firstSlot(s), n = replicasOf(s);
  SmallVector<int64_t> ids;
  ids.reserve(n * tp);
  for (int64_t d = 0; d < n; ++d)
    for (int64_t t = 0; t < tp; ++t)
      ids.push_back(t + tp * (first + d));
  return ids;
}

/// Reads `replicas` of \p plan into \p grid: one count of at least 1 per
/// pipeline stage, only with dp = 1 and chunks = 1.
static LogicalResult readReplicas(ModuleOp module, DictionaryAttr plan,
                                  StageGrid &grid) {
  Attribute field = plan.get("replicas");
  if (!field)
    return success();
  auto counts = dyn_cast<DenseI64ArrayAttr>(field);
  if (!counts || static_cast<int64_t>(counts.size()) != grid.pp)
    return module.emitError("'dist.plan' field 'replicas' must be an i64 "
                            "array with one replica count per pipeline stage "
                            "(pp = ")
           << grid.pp << "), got " << field;
  if (grid.dp != 1 || grid.chunks != 1)
    return module.emitError("'dist.plan' has 'replicas' together with dp = ")
           << grid.dp << " and chunks = " << grid.chunks
           << "; per-stage replicas need dp = 1 and chunks = 1";
  for (int64_t r : counts.asArrayRef())
    if (r < 1)
      return module.emitError("'dist.plan' replica counts must be at least "
                              "1, got ")
             << r;
  grid.replicas.assign(counts.asArrayRef().begin(), counts.asArrayRef().end());
  return success();
}

FailureOr<StageGrid> partition::readStageGrid(ModuleOp module,
                                              func::FuncOp func) {
  Attribute raw = module->getAttr(kPlanAttr);
  if (!raw)
    return func.emitError("function @")
           << func.getSymName()
           << " has ops annotated with 'dist.stage' but the module has no "
              "'dist.plan'; plan the module first (dist-opt --dist-cluster=... "
              "--dist-plan=... or --dist-search) so that the stages have "
              "devices";
  auto plan = dyn_cast<DictionaryAttr>(raw);
  if (!plan)
    return module.emitError("'dist.plan' must be a dictionary of plan fields "
                            "(dp, tp, pp, chunks, ...), got ")
           << raw;
  StageGrid grid;
  auto read = [&](StringRef name, int64_t &out,
                  bool required) -> LogicalResult {
    Attribute field = plan.get(name);
    if (!field && !required)
      return success();
    auto value = dyn_cast_or_null<IntegerAttr>(field);
    if (!value)
      return module.emitError("'dist.plan' needs an integer field '")
             << name << "' to outline pipeline stages"
             << (field ? ", got a non-integer" : "")
             << "; re-run the planner to write a complete plan";
    out = value.getInt();
    if (out < 1)
      return module.emitError("'dist.plan' field '")
             << name << "' must be at least 1, got " << out;
    return success();
  };
  if (failed(read("dp", grid.dp, true)) || failed(read("tp", grid.tp, true)) ||
      failed(read("pp", grid.pp, true)) ||
      failed(read("chunks", grid.chunks, false)))
    return failure();
  // Bounds keep the device lists small and the products below free of
  // overflow; real plans are far inside them.
  constexpr int64_t kMaxMesh = int64_t(1) << 24, kMaxStages = int64_t(1) << 20;
  int64_t widest = grid.dp;
  if (failed(readReplicas(module, plan, grid)))
    return failure();
  for (int64_t r : grid.replicas)
    widest = std::max(widest, r);
  if (widest > kMaxMesh || grid.tp > kMaxMesh || grid.pp > kMaxStages ||
      grid.chunks > kMaxStages || widest * grid.tp > kMaxMesh ||
      grid.pp * grid.chunks > kMaxStages)
    return module.emitError("'dist.plan' is too large to outline: ")
           << widest << " data-parallel replicas, tp = " << grid.tp
           << ", pp = " << grid.pp << ", chunks = " << grid.chunks
           << "; a stage mesh holds at most " << kMaxMesh
           << " devices and a pipeline at most " << kMaxStages
           << " virtual stages";
  if (auto cluster = module->getAttrOfType<dist::ClusterAttr>("dist.cluster")) {
    int64_t need = grid.numDevices();
    if (need > cluster.getNumDevices())
      return module.emitError("'dist.plan' needs ")
             << need << " devices (tp * "
             << (grid.replicas.empty() ? "dp * pp" : "sum(replicas)")
             << ") but 'dist.cluster' has " << cluster.getNumDevices()
             << "; plan for this cluster again";
  }
  return grid;
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
/// the FLOP-count interface).
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
  auto flops = dyn_cast<graph::FlopCountOpInterface>(op);
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

/// Reads and range-checks `dist.stage` of \p op.
static FailureOr<int64_t> annotatedStage(Operation *op, Attribute raw,
                                         const StageGrid &grid) {
  auto attr = dyn_cast<IntegerAttr>(raw);
  if (!attr)
    return op->emitOpError("'dist.stage' must be an integer virtual stage "
                           "index, got ")
           << raw;
  int64_t v = attr.getInt(), n = grid.numVirtualStages();
  if (v < 0 || v >= n)
    return op->emitOpError("'dist.stage' = ")
           << v << " is out of range: 'dist.plan' has pp * chunks = " << grid.pp
           << " * " << grid.chunks << " = " << n << " virtual stages (0.."
           << n - 1 << "); re-run the planner or fix the annotation";
  return v;
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
      diag << " (the op has no 'dist.stage' and goes to stage " << w
           << ", the first stage using it)";
    diag << "; values may only flow to the same or a later stage: fix the "
            "'dist.stage' annotations (or re-run the planner) so that no "
            "producer's stage is after its user's";
    diag.attachNote(def->getLoc())
        << "the value is produced here, in stage " << u;
    return failure();
  }
  return success();
}

FailureOr<StagePlacement> partition::placeOps(func::FuncOp func,
                                              const StageGrid &grid) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("function @")
           << func.getSymName() << " has " << func.getBody().getBlocks().size()
           << " blocks; outlining pipeline stages needs a single-block body";
  Block &body = func.getBody().front();
  int64_t last = grid.numVirtualStages() - 1;
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
      FailureOr<int64_t> v = annotatedStage(&op, raw, grid);
      if (failed(v))
        return failure();
      placement.stages[&op] = {*v};
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
