//===- DistVerify.cpp - Verifying the dist discardable attributes -*- C++ -*-===//
//
// Part of DistOpt. The planning passes write their results as discardable
// `dist.*` attributes on the module, its functions and its ops; this file
// checks them wherever they appear, so a hand-edited or foreign module that
// carries a wrong one is rejected by the verifier rather than by a pass
// deep in the pipeline (or not at all).
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/Balanced.h"
#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace distopt::dist;

using Cluster = DistDialect::ClusterAttrHelper;
using Plan = DistDialect::PlanAttrHelper;
using Layer = DistDialect::LayerAttrHelper;
using VirtualStage = DistDialect::VirtualStageAttrHelper;
using ActionList = DistDialect::ActionListAttrHelper;
using ActionLabel = DistDialect::ActionAttrHelper;
using TrainPhase = DistDialect::TrainPhaseAttrHelper;
using Tp = DistDialect::TpAttrHelper;
using Shift = DistDialect::ShiftAttrHelper;
using TpShard = DistDialect::TpShardAttrHelper;
using BatchShard = DistDialect::BatchShardAttrHelper;
using ContextSplit = DistDialect::ContextSplitAttrHelper;
using Accumulates = DistDialect::AccumulatesAttrHelper;
using DataParallel = DistDialect::DataParallelAttrHelper;
using Zero = DistDialect::ZeroAttrHelper;
using Groups = DistDialect::GroupsAttrHelper;
using ZeroShard = DistDialect::ZeroShardAttrHelper;
using Branch = DistDialect::BranchAttrHelper;
using BranchDevices = DistDialect::BranchDevicesAttrHelper;

/// The plan of the module enclosing \p op, if any.
static PlanAttr enclosingPlan(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  return module ? module->getAttrOfType<PlanAttr>(Plan::getNameStr())
                : PlanAttr();
}

/// Checks that \p attr is a non-negative i64 index.
static LogicalResult verifyIndex(Operation *op, NamedAttribute attr,
                                 StringRef what) {
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || !value.getType().isInteger(64) || value.getInt() < 0)
    return op->emitOpError("'")
           << attr.getName().getValue() << "' must be a non-negative i64 "
           << what << ", got " << attr.getValue();
  return success();
}

/// `dist.groups` on a collective: the disjoint device groups that run it
/// alike (each device with the group that holds it), the op's own `group`
/// among them, all of its size.
static LogicalResult verifyGroups(Operation *op, Attribute value) {
  std::optional<ArrayRef<int64_t>> group = groupOf(op);
  auto groups = dyn_cast<ArrayAttr>(value);
  if (!group || group->empty() || !groups || groups.empty() ||
      !llvm::all_of(groups, llvm::IsaPred<DenseI64ArrayAttr>))
    return op->emitOpError(
               "'dist.groups' is a list of device groups "
               "([array<i64: ...>, ...]) on a collective, dist.tp_copy or ZeRO "
               "block over an explicit group (written by the partitioner for a "
               "program several groups run), got ")
           << value;
  ArrayRef<int64_t> own = *group;
  llvm::DenseSet<int64_t> seen;
  bool hasOwn = false;
  for (auto g : groups.getAsRange<DenseI64ArrayAttr>()) {
    if (g.size() != static_cast<int64_t>(own.size()))
      return op->emitOpError("'dist.groups' lists a group of ")
             << g.size() << " device(s), but the op's group has " << own.size()
             << "; every group runs the op alike";
    for (int64_t d : g.asArrayRef())
      if (d < 0 || !seen.insert(d).second)
        return op->emitOpError("'dist.groups' lists device ")
               << d << (d < 0 ? ", which is negative" : " twice")
               << "; the groups are disjoint sets of device numbers";
    hasOwn |= g.asArrayRef() == own;
  }
  if (!hasOwn)
    return op->emitOpError("'dist.groups' does not list the op's own group; "
                           "the op's group is one of the groups that run it");
  return success();
}

/// `dist.balanced` (Balanced.h): a unit attribute on a slice, gather or
/// reduce-scatter whose whole side cuts into 2 x group-size chunks behind
/// unit dimensions, or on a ring whose blocks are even.
static LogicalResult verifyBalanced(Operation *op, Attribute value) {
  auto fail = [&]() { return op->emitOpError("'dist.balanced' "); };
  if (!isa<UnitAttr>(value))
    return fail() << "is a unit attribute, got " << value;
  Value whole;
  int64_t axis = 0, parts = 0;
  if (auto s = dyn_cast<AllSliceOp>(op)) {
    whole = s.getInput(), axis = s.getAxis(), parts = s.getGroup().size();
  } else if (auto g = dyn_cast<AllGatherOp>(op)) {
    whole = g.getResult(), axis = g.getAxis(), parts = g.getGroup().size();
  } else if (auto r = dyn_cast<ReduceScatterOp>(op)) {
    whole = r.getInput(), axis = r.getAxis(), parts = r.getGroup().size();
  } else if (isa<RingAttentionOp, RingAttentionGradOp>(op)) {
    auto q = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto k = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    if (!q || !k || q.getRank() < 2 || k.getRank() < 2)
      return success(); // the op's own verifier names the shapes
    int64_t sq = q.getDimSize(q.getRank() - 2),
            skv = k.getDimSize(k.getRank() - 2);
    if (sq % 2 != 0 || skv % 2 != 0)
      return fail() << "marks a ring whose device holds " << sq
                    << " queries and " << skv
                    << " keys; a balanced device holds two equal chunks of "
                       "the sequence, so both must be even (drop it)";
    return success();
  } else {
    return fail() << "marks the load-balanced split of a sequence on a "
                     "dist.all_slice, dist.all_gather, dist.reduce_scatter or "
                     "ring attention (set by dist-context-parallel)";
  }
  auto type = dyn_cast<RankedTensorType>(whole.getType());
  if (parts < 1)
    return fail() << "needs an explicit group: the chunks a device holds "
                     "follow from its place in the group";
  if (!type || axis < 0 || axis >= type.getRank())
    return success(); // the op's own verifier names the axis
  if (llvm::any_of(type.getShape().take_front(axis),
                   [](int64_t d) { return d != 1; }))
    return fail() << "splits axis " << axis << " of " << type
                  << ", whose dimensions before the axis are not all 1; a "
                     "balanced split takes runs of the flattened elements "
                     "(move the axis first, or drop it)";
  int64_t size = type.getDimSize(axis);
  if (!ShapedType::isDynamic(size) && size % (2 * parts) != 0)
    return fail() << "splits dimension " << axis << " of size " << size
                  << ", which does not cut into the " << 2 * parts
                  << " chunks (2 x " << parts
                  << " devices) the balanced split pairs; drop it or use a "
                     "size that divides";
  return success();
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto onModuleOnly = [&](auto typed, StringRef what) -> LogicalResult {
    if (!isa<ModuleOp>(op))
      return op->emitOpError("'")
             << name << "' belongs on the module, not on an op; the planner "
             << "writes it on builtin.module";
    if (!typed)
      return op->emitOpError("'")
             << name << "' must be a " << what << ", got " << attr.getValue();
    return success();
  };
  if (name == Cluster::getNameStr()) {
    auto cluster = dyn_cast<ClusterAttr>(attr.getValue());
    if (failed(onModuleOnly(cluster, "#dist.cluster")))
      return failure();
    if (auto plan = op->getAttrOfType<PlanAttr>(Plan::getNameStr()))
      if (plan.getNumDevices() > cluster.getNumDevices())
        return op->emitOpError("'dist.plan' needs ")
               << plan.getNumDevices() << " devices but 'dist.cluster' '"
               << cluster.getName() << "' has " << cluster.getNumDevices();
    return success();
  }
  if (name == Plan::getNameStr())
    return onModuleOnly(dyn_cast<PlanAttr>(attr.getValue()), "#dist.plan");
  if (name == Layer::getNameStr())
    return verifyIndex(op, attr, "layer index");
  if (name == VirtualStage::getNameStr()) {
    if (failed(verifyIndex(op, attr, "virtual stage index")))
      return failure();
    int64_t stage = cast<IntegerAttr>(attr.getValue()).getInt();
    PlanAttr plan = enclosingPlan(op);
    if (!plan)
      return success();
    if (stage >= plan.getNumVirtualStages())
      return op->emitOpError("'dist.virtual_stage' is ")
             << stage << " but the module's plan has "
             << plan.getNumVirtualStages() << " virtual stages (pp = "
             << plan.getPp() << ", chunks = " << plan.getChunks() << ")";
    // The plan's stages list the first layer of each virtual stage; an op of
    // layer L belongs to the last one that starts at or before L. Stage
    // outlining follows the ops and the simulator the plan, so an op placed
    // elsewhere would make a program that is not the plan predicted.
    auto layer = op->getAttrOfType<IntegerAttr>(Layer::getNameStr());
    if (!layer || !layer.getType().isInteger(64) || layer.getInt() < 0)
      return success();
    ArrayRef<int64_t> starts = plan.getStages();
    int64_t owner = -1;
    for (auto [vs, first] : llvm::enumerate(starts))
      if (first <= layer.getInt())
        owner = vs;
    if (owner >= 0 && owner != stage)
      return op->emitOpError("'dist.virtual_stage' is ")
             << stage << " but the module's plan puts layer "
             << layer.getInt() << " ('dist.layer') in virtual stage " << owner
             << " (stages = [" << starts
             << "]); plan the module again (dist-set-plan or "
                "dist-search-plan) instead of editing either";
    return success();
  }
  if (name == ActionList::getNameStr()) {
    if (!isa<func::FuncOp>(op))
      return op->emitOpError("'dist.action_list' marks the program of one "
                             "action list, a func.func (dist-partition "
                             "writes it)");
    if (failed(verifyIndex(op, attr, "action list index")))
      return failure();
    // The plan says how many lists there are (codegen sizes its tables by
    // the index: a bound is needed).
    int64_t list = cast<IntegerAttr>(attr.getValue()).getInt();
    PlanAttr plan = enclosingPlan(op);
    if (!plan)
      return op->emitOpError("'dist.action_list' is ")
             << list
             << ", the index of one of the action lists of the module's "
                "plan, but the module has no 'dist.plan'; run dist-partition "
                "on a planned module";
    schedule::RankLayout layout = plan.getLayout();
    int64_t lists = layout.replicated()
                        ? static_cast<int64_t>(layout.numSlots())
                        : layout.pp;
    if (list >= lists)
      return op->emitOpError("'dist.action_list' is ")
             << list << " but the module's plan has " << lists
             << " action lists";
    return success();
  }
  if (name == ActionLabel::getNameStr()) {
    // The schedule action an op of a per-list program carries out, as
    // schedule::Action::str() names it ("F3.0", "sendA3.0>2", "AR.0",
    // "OPT"): what the executor's trace calls the op's time.
    auto label = dyn_cast<StringAttr>(attr.getValue());
    auto fn = op->getParentOfType<func::FuncOp>();
    if (!label || label.getValue().empty() || !fn ||
        !fn->hasAttr(ActionList::getNameStr()))
      return op->emitOpError(
                 "'dist.action' names the schedule action (\"F3.0\", "
                 "\"OPT\", ...) an op of an action list's program "
                 "carries out (dist-partition writes it), got ")
             << attr.getValue();
    return success();
  }
  if (name == TrainPhase::getNameStr()) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !phase ||
        !llvm::is_contained({"forward", "backward_input", "backward_weight"},
                            phase.getValue()))
      return op->emitOpError("'dist.train_phase' marks the function of one "
                             "stage's forward, backward_input or "
                             "backward_weight work (dist-partition writes "
                             "it), got ")
             << attr.getValue();
    return success();
  }
  if (name == Tp::getNameStr()) {
    if (!isa<TensorParallelRoleAttr>(attr.getValue()))
      return op->emitOpError("'dist.tp' must be a tensor-parallel role "
                             "#dist.tp<column|row|split|replicated>, got ")
             << attr.getValue();
    return success();
  }
  if (name == TpShard::getNameStr()) {
    // [dim, blocks, parts], or [dim, blocks, parts, stride] per axis: the
    // op's tensor is part `(rank / stride) mod parts` of the full one along
    // each axis's `dim`, viewed as [blocks][parts][n] there
    // (dist-tensor-parallel; dist-expert-parallel's experts, with tensor
    // parallelism also split along a feature axis).
    auto shard = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    auto type = op->getNumResults() == 1
                    ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                    : RankedTensorType();
    // A ZeRO block of the part (`dist.zero_shard`) names the part's shape.
    if (auto block = ZeroShard(op->getContext()).getAttr(op))
      if (auto shape = block.getAs<DenseI64ArrayAttr>("shape"); shape && type)
        type = RankedTensorType::get(shape.asArrayRef(), type.getElementType());
    SmallVector<ShardAxis> axes =
        shard ? shardAxes(shard.asArrayRef()) : SmallVector<ShardAxis>();
    if (axes.empty() || axes.size() > 2 || !type ||
        op->getName().getDialectNamespace() != "graph")
      return op->emitOpError("'dist.tp_shard' is [dim, blocks, parts], or "
                             "[dim, blocks, parts, stride] for each of one "
                             "or two axes, on a graph.weight, graph.state or "
                             "dropout (written by dist-tensor-parallel and "
                             "dist-expert-parallel), got ")
             << attr.getValue();
    for (const ShardAxis &a : axes)
      if (a.dim < 0 || a.dim >= type.getRank() || a.blocks < 1 || a.parts < 2 ||
          a.stride < 1 || type.isDynamicDim(a.dim) ||
          type.getDimSize(a.dim) % a.blocks != 0)
        return op->emitOpError("'dist.tp_shard' axis [")
               << a.dim << ", " << a.blocks << ", " << a.parts << ", "
               << a.stride << "] does not fit " << type
               << ": dim must index the tensor, blocks divide its size "
                  "there, parts be at least 2 and stride at least 1";
    // Two axes split different dimensions by independent digits of the
    // rank, so that each rank holds one block and every block is held.
    if (axes.size() == 2) {
      const ShardAxis &a = axes[0], &b = axes[1];
      if (a.dim == b.dim)
        return op->emitOpError("'dist.tp_shard' splits dimension ")
               << a.dim
               << " twice; the two axes must split different "
                  "dimensions";
      if (a.stride * a.parts > b.stride && b.stride * b.parts > a.stride)
        return op->emitOpError("'dist.tp_shard' axes of ")
               << a.parts << " parts by stride " << a.stride << " and "
               << b.parts << " parts by stride " << b.stride
               << " read overlapping digits of the rank; one axis's stride "
                  "must be at least the other's stride times its parts";
    }
    return success();
  }
  if (name == DistDialect::BatchBlockAttrHelper::getNameStr()) {
    // The op's mask is the block of the whole batch's that the running
    // call computes: a rank's rows (dist-data-parallel), or a replica's
    // micro-batch (dist-partition).
    if (!isa<UnitAttr>(attr.getValue()) ||
        op->getName().getStringRef() != "graph.dropout_mask")
      return op->emitOpError("'dist.batch_block' is a unit attribute of a "
                             "graph.dropout_mask (set by "
                             "dist-data-parallel and dist-partition), got ")
             << attr.getValue();
    return success();
  }
  if (name == DistDialect::MicrobatchAttrHelper::getNameStr()) {
    // The micro-batch an action list's stage call computes.
    if (!isa<func::CallOp>(op))
      return op->emitOpError("'dist.microbatch' marks the micro-batch of a "
                             "stage call, a func.call (dist-partition writes "
                             "it)");
    if (failed(verifyIndex(op, attr, "micro-batch index")))
      return failure();
    int64_t mb = cast<IntegerAttr>(attr.getValue()).getInt();
    if (PlanAttr plan = enclosingPlan(op); plan && mb >= plan.getMicrobatches())
      return op->emitOpError("'dist.microbatch' is ")
             << mb << " but the module's plan runs " << plan.getMicrobatches()
             << " micro-batches per step";
    return success();
  }
  if (name == DataParallel::getNameStr()) {
    if (!isa<func::FuncOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'dist.data_parallel' is a unit attribute of a "
                             "func.func (set by dist-data-parallel)");
    return success();
  }
  if (name == Zero::getNameStr()) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto stage = dict ? dict.getAs<IntegerAttr>("stage") : IntegerAttr();
    auto replicas = dict ? dict.getAs<IntegerAttr>("replicas") : IntegerAttr();
    if (!isa<func::FuncOp>(op) || !stage || !replicas || dict.size() != 2 ||
        stage.getInt() < 1 || stage.getInt() > 3 || replicas.getInt() < 2)
      return op->emitOpError("'dist.zero' is {stage = S, replicas = N} on a "
                             "func.func (ZeRO stage 1-3 over N >= 2 "
                             "data-parallel replicas; set by "
                             "dist-data-parallel), got ")
             << attr.getValue();
    return success();
  }
  if (name == ZeroShard::getNameStr()) {
    // {shape = array<i64: ...>, group = array<i64: ...>} on the 1-D result
    // holding one block of the flattened, zero-padded tensor of `shape`.
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto shape = dict ? dict.getAs<DenseI64ArrayAttr>("shape")
                      : DenseI64ArrayAttr();
    auto group = dict ? dict.getAs<DenseI64ArrayAttr>("group")
                      : DenseI64ArrayAttr();
    auto result = op->getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                      : RankedTensorType();
    bool ok = shape && group && dict.size() == 2 && group.size() >= 2 &&
              result && result.getRank() == 1 &&
              llvm::all_of(shape.asArrayRef(), [](int64_t d) { return d > 0; });
    if (ok) {
      int64_t numel = 1;
      for (int64_t d : shape.asArrayRef())
        numel *= d;
      int64_t n = static_cast<int64_t>(group.size());
      ok = result.getDimSize(0) == (numel + n - 1) / n;
    }
    if (!ok)
      return op->emitOpError("'dist.zero_shard' is {shape = array<i64: ...>, "
                             "group = array<i64: ...>} on an op whose 1-D "
                             "result is one of the group's equal blocks of "
                             "the flattened tensor of that shape (ZeRO; set "
                             "by dist-data-parallel and dist-partition), got ")
             << attr.getValue();
    return success();
  }
  if (name == Groups::getNameStr())
    return verifyGroups(op, attr.getValue());
  if (name == kBalancedAttr)
    return verifyBalanced(op, attr.getValue());
  if (name == ContextSplit::getNameStr()) {
    auto cp = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<AllSliceOp>(op) || !cp || !cp.getType().isInteger(64) ||
        cp.getInt() < 2)
      return op->emitOpError("'dist.context_split' is the context-parallel "
                             "degree (an i64 >= 2) on a dist.all_slice of a "
                             "function input (set by dist-context-parallel), "
                             "got ")
             << attr.getValue();
    return success();
  }
  if (name == Shift::getNameStr()) {
    auto max = dyn_cast<AllReduceOp>(op);
    if (!isa<UnitAttr>(attr.getValue()) || !max ||
        max.getKind() != ReductionKind::max)
      return op->emitOpError("'dist.shift' marks a dist.all_reduce max whose "
                             "result only shifts values (a unit attribute, "
                             "set by dist-tensor-parallel), got ")
             << attr.getValue();
    return success();
  }
  if (name == Branch::getNameStr())
    return verifyIndex(op, attr, "branch-placement piece index");
  if (name == BranchDevices::getNameStr()) {
    auto devices = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (failed(onModuleOnly(devices, "array<i64: ...> of device numbers")))
      return failure();
    // The trunk, at least two branches and the tail.
    if (devices.size() < 4)
      return op->emitOpError("'dist.branch_devices' lists ")
             << devices.size()
             << " device(s); a branch placement gives the trunk, at least "
                "two branches and the tail a device each";
    auto cluster = op->getAttrOfType<ClusterAttr>(Cluster::getNameStr());
    for (int64_t d : devices.asArrayRef())
      if (d < 0 || (cluster && d >= cluster.getNumDevices()))
        return op->emitOpError("'dist.branch_devices' lists device ")
               << d << " but the module's cluster has devices 0.."
               << (cluster ? cluster.getNumDevices() - 1 : 0)
               << "; plan the module again (--dist-branches)";
    return success();
  }
  if (name == BatchShard::getNameStr() || name == Accumulates::getNameStr())
    return op->emitOpError("'")
           << name << "' marks function arguments; put it in the argument's "
           << "attribute dictionary";
  return op->emitOpError("unknown attribute '")
         << name << "' of the dist dialect";
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned region,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == BatchShard::getNameStr()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'dist.batch_shard' on argument #")
             << argIndex << " must be a unit attribute";
    return success();
  }
  if (name == Accumulates::getNameStr()) {
    // The argument is the running sum result k adds to: same type.
    auto fn = dyn_cast<FunctionOpInterface>(op);
    auto k = dyn_cast<IntegerAttr>(attr.getValue());
    if (!fn || region != 0 || !k || !k.getType().isInteger(64) ||
        k.getInt() < 0 || k.getInt() >= (int64_t)fn.getNumResults() ||
        fn.getResultTypes()[k.getInt()] != fn.getArgumentTypes()[argIndex])
      return op->emitOpError("'dist.accumulates' on argument #")
             << argIndex << " must be the i64 index of a result of the "
             << "function with the argument's type, got " << attr.getValue();
    // Read once, by the op that makes result k: the emission computes that
    // result in the argument's buffer.
    if (fn.isExternal())
      return success();
    Block &body = fn.getFunctionBody().front();
    BlockArgument arg = body.getArgument(argIndex);
    Operation *ret = body.getTerminator();
    if (!arg.hasOneUse() || !ret ||
        ret->getNumOperands() != fn.getNumResults() ||
        ret->getOperand(k.getInt()).getDefiningOp() != *arg.user_begin())
      return op->emitOpError("argument #")
             << argIndex << " ('dist.accumulates' = " << k.getInt()
             << ") must be read once, by the op that computes result #"
             << k.getInt();
    return success();
  }
  return op->emitOpError("unknown argument attribute '")
         << name << "' of the dist dialect on argument #" << argIndex;
}
