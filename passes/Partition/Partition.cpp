//===- Partition.cpp - The dist-partition pass -------------------*- C++ -*-===//
//
// Part of DistOpt. One function per action list of the schedule: the list's
// actions in order as calls of the stage functions and the sends and
// receives of the values that cross stage boundaries. What a device runs
// is then ordinary IR, and the code generator only prints it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Graph/GraphOps.h"
#include "passes/Partition/BoundarySends.h"
#include "passes/Partition/PartitionBranches.h"
#include "passes/Partition/ScheduleIR.h"
#include "passes/Partition/TrainStages.h"
#include "passes/Planning/Planning.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"


namespace distopt {
#define GEN_PASS_DEF_PARTITIONPASS
#include "passes/Partition/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using schedule::Action;
using schedule::ActionKind;

namespace {
/// The dataflow of one micro-batch through the stage functions, read from
/// the pipelined function's calls.
struct StageGraph {
  /// The call of each virtual stage.
  SmallVector<func::CallOp> calls;
  /// Per virtual stage v: the values of stage v that stage v + 1 reads, in
  /// the order v + 1 reads them (the boundary message, one tag each).
  SmallVector<SmallVector<Value>> boundary;
  /// The widest boundary (tags are v * width + k).
  unsigned width = 1;
};
} // namespace

/// Reads the calls of \p func; every stage input must be a function
/// argument or a result of the previous stage (what dist-outline-stages
/// makes).
static FailureOr<StageGraph> readStageGraph(func::FuncOp func,
                                            ArrayRef<func::FuncOp> stages) {
  StageGraph g;
  g.calls.resize(stages.size());
  g.boundary.resize(stages.size());
  for (Operation &op : func.getBody().front()) {
    auto call = dyn_cast<func::CallOp>(op);
    if (!call) {
      if (isa<func::ReturnOp>(op))
        continue;
      return op.emitOpError("is outside the stage functions of pipelined @")
             << func.getSymName()
             << "; after outlining the function holds only stage calls";
    }
    auto it = llvm::find_if(stages, [&](func::FuncOp f) {
      return f.getSymName() == call.getCallee();
    });
    if (it == stages.end())
      return call.emitOpError("calls @")
             << call.getCallee() << ", which is not one of @"
             << func.getSymName() << "'s stage functions";
    g.calls[it - stages.begin()] = call;
  }
  for (auto [v, call] : llvm::enumerate(g.calls))
    for (Value operand : call.getOperands()) {
      if (isa<BlockArgument>(operand))
        continue;
      auto from = operand.getDefiningOp<func::CallOp>();
      if (!from || v == 0 || from != g.calls[v - 1])
        return call.emitOpError("reads a value that is neither an input of @")
               << func.getSymName() << " nor a result of stage " << v - 1
               << "; values flow from stage to stage (outline the stages "
                  "again with dist-outline-stages)";
      if (!llvm::is_contained(g.boundary[v - 1], operand))
        g.boundary[v - 1].push_back(operand);
    }
  for (const auto &b : g.boundary)
    g.width = std::max<unsigned>(g.width, b.size());
  if (stages.size() * g.width > 32768)
    return func.emitError("@")
           << func.getSymName() << ": " << stages.size() << " stages of up to "
           << g.width
           << " boundary values each need more than the 32768 tags the "
              "runtime's transfers carry";
  return g;
}

/// Builds the program of list \p list.
static LogicalResult buildList(func::FuncOp func, dist::PlanAttr plan,
                               const StageGraph &g,
                               const partition::ScheduleIR &s, unsigned list,
                               OpBuilder &b) {
  MLIRContext *ctx = func.getContext();
  int64_t m = s.schedule.microbatches;
  unsigned pp = s.schedule.pp, last = g.calls.size() - 1;
  bool holdsLast = s.schedule.stageOfList(list) == last % pp;
  Location loc = func.getLoc();
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());

  SmallVector<Type> inputs, outputs;
  for (BlockArgument arg : func.getArguments())
    inputs.push_back(partition::batchedType(arg.getType(), m));
  // Data parallelism: each replica of the pipeline streams its own rows of
  // the batch, and the last stage's replicas gather every replica's
  // results (in replica order: the rows of the batch in order).
  schedule::RankLayout layout = plan.getLayout();
  if (holdsLast)
    for (Value v : ret.getOperands())
      outputs.push_back(partition::batchedType(v.getType(), m * layout.dp));
  std::string name =
      (func.getSymName() + "_rank" + Twine(list)).str();
  auto fn = func::FuncOp::create(b, loc, name,
                                 FunctionType::get(ctx, inputs, outputs));
  fn.setAllArgAttrs(func.getAllArgAttrs());
  if (holdsLast)
    fn.setAllResultAttrs(func.getAllResultAttrs());
  if (layout.dp > 1)
    for (unsigned k = 0; k < fn.getNumArguments(); ++k)
      fn.setArgAttr(k, dist::DistDialect::BatchShardAttrHelper::getNameStr(),
                    b.getUnitAttr());
  dist::DistDialect::ActionListAttrHelper(ctx).setAttr(
      fn, b.getI64IntegerAttr(list));
  Block *entry = fn.addEntryBlock();
  OpBuilder ib = OpBuilder::atBlockEnd(entry);

  partition::MicrobatchValues values(ib, entry, m, loc);
  auto valueOf = [&](int64_t mb, Value v) { return values.get(mb, v); };
  auto tag = [&](unsigned v, unsigned k) {
    return static_cast<int64_t>(v) * g.width + k;
  };
  schedule::Plan stagePlan = plan.toPlan();
  unsigned stage = s.schedule.stageOfList(list);
  // Boundary values every tensor rank holds whole go by scatter/gather.
  partition::TensorRankVariance variance(func, stagePlan);

  for (auto [i, a] : llvm::enumerate(s.schedule.devices[list])) {
    Operation *at = s.actions[list][i];
    unsigned v = s.schedule.stageOf(list, a.chunk);
    Operation *before = entry->empty() ? nullptr : &entry->back();
    switch (a.kind) {
    case ActionKind::Forward: {
      func::CallOp call = g.calls[v];
      SmallVector<Value> operands;
      for (Value operand : call.getOperands()) {
        Value mapped = valueOf(a.mb, operand);
        if (!mapped)
          return at->emitOpError("runs stage ")
                 << v << " of micro-batch " << a.mb
                 << " before its input from stage " << v - 1
                 << " is there (received or computed on this list); run "
                    "dist-verify-schedule";
        operands.push_back(mapped);
      }
      auto copy = func::CallOp::create(ib, call.getLoc(), call.getCalleeAttr(),
                                       call.getResultTypes(), operands);
      for (auto [res, val] : llvm::zip(call.getResults(), copy.getResults()))
        values.set(a.mb, res, val);
      break;
    }
    case ActionKind::SendActivation:
      for (auto [k, boundary] : llvm::enumerate(g.boundary[v])) {
        Value val = valueOf(a.mb, boundary);
        if (!val)
          return at->emitOpError("sends stage ")
                 << v << "'s activations of micro-batch " << a.mb
                 << " before that stage ran on this list";
        partition::sendBoundary(ib, at->getLoc(), val,
                                !variance.varies(boundary), a.peer, tag(v, k),
                                stagePlan, stage);
      }
      break;
    case ActionKind::RecvActivation:
      if (v == 0)
        return at->emitOpError("receives activations into the first stage");
      for (auto [k, boundary] : llvm::enumerate(g.boundary[v - 1]))
        values.set(a.mb, boundary,
                   partition::recvBoundary(ib, at->getLoc(), boundary.getType(),
                                           !variance.varies(boundary), a.peer,
                                           tag(v - 1, k), stagePlan, stage));
      break;
    default:
      return at->emitOpError("has no lowering yet: dist-partition lowers the "
                             "forward stream (forward, send_activation, "
                             "recv_activation); pipeline training is the "
                             "next step");
    }
    partition::labelAction(entry, before, a);
  }

  SmallVector<Value> results;
  if (holdsLast)
    for (Value v : ret.getOperands()) {
      SmallVector<Value> parts;
      for (int64_t mb = 0; mb < m; ++mb) {
        Value part = valueOf(mb, v);
        if (!part)
          return dist::ScheduleOp(s.op).emitOpError("list ")
                 << list << " runs the last stage but never computes "
                 << "micro-batch " << mb << " of @" << func.getSymName()
                 << "'s results";
        parts.push_back(part);
      }
      Value merged = dist::MicrobatchMergeOp::create(
          ib, loc, partition::batchedType(v.getType(), m), parts,
          ib.getI64IntegerAttr(0));
      if (layout.dp > 1) {
        std::vector<std::vector<unsigned>> replicas =
            layout.replicaGroups(s.schedule.stageOfList(list));
        auto gather = dist::AllGatherOp::create(
            ib, loc, partition::batchedType(merged.getType(), layout.dp),
            merged, ib.getI64IntegerAttr(0),
            dist::deviceGroup(ctx, replicas.front()));
        dist::setRunGroups(gather, replicas);
        merged = gather.getResult();
      }
      results.push_back(merged);
    }
  func::ReturnOp::create(ib, loc, results);
  return success();
}

namespace {
struct PartitionPass
    : public distopt::impl::PartitionPassBase<PartitionPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  /// dist-autodiff's training step, if the module has one.
  static FailureOr<func::FuncOp> trainingStep(ModuleOp module) {
    for (auto f : module.getOps<func::FuncOp>()) {
      auto cfg = f->getAttrOfType<DictionaryAttr>("graph.train");
      if (!cfg)
        continue;
      auto role = cfg.getAs<StringAttr>("role");
      if (role && role.getValue() != "step")
        return f.emitError("dist-partition: @")
               << f.getSymName()
               << " accumulates gradients over micro-batches itself "
                  "(dist-autodiff accumulation-steps > 1); in a pipeline the "
                  "plan's micro-batches are the accumulation: drop "
                  "accumulation-steps and set the micro-batches with the "
                  "plan (global batch / mbs)";
      return f;
    }
    return func::FuncOp();
  }

  /// Outlines the training step when needed, writes its schedule when the
  /// module has none, and builds every list's program.
  LogicalResult partitionTraining(ModuleOp module, dist::PlanAttr plan,
                                  func::FuncOp train) {
    if (plan.toPlan().mode == schedule::Mode::Infer)
      return emitError(module.getLoc())
             << "dist-partition: @" << train.getSymName()
             << " is a training step but the plan is an inference plan "
                "(mode = infer); plan it for training (--dist-mode=train)";
    bool outlined = llvm::any_of(train.getOps<func::CallOp>(), [&](auto c) {
      auto callee = module.lookupSymbol<func::FuncOp>(c.getCallee());
      return callee && partition::trainGroupOf(callee);
    });
    if (!outlined) {
      if (plan.toPlan().recompute == cost::Recompute::Selective)
        partition::rematerializeAttentionCores(train);
      if (failed(partition::outlineTrainStages(train,
                                               plan.getNumVirtualStages())))
        return failure();
    }
    // One schedule, for the step (a forward stream of @main is replaced).
    for (auto op : llvm::make_early_inc_range(module.getOps<dist::ScheduleOp>()))
      if (op.getFunction() != train.getSymName())
        op.erase();
    if (module.getOps<dist::ScheduleOp>().empty()) {
      FailureOr<SmallVector<func::FuncOp>> stages =
          partition::stageFunctions(train, plan);
      if (failed(stages))
        return failure();
      llvm::Expected<schedule::Schedule> s =
          partition::planSchedule(plan.toPlan());
      if (!s)
        return emitError(module.getLoc())
               << "dist-partition: " << llvm::toString(s.takeError());
      partition::writeSchedule(train, plan, *s, *stages);
    }
    FailureOr<std::optional<partition::ScheduleIR>> ir =
        partition::readScheduleIR(module, plan);
    if (failed(ir) || !*ir)
      return failure();
    if ((*ir)->schedule.forwardOnly)
      return (*ir)->op.emitOpError("is a forward stream but @")
             << train.getSymName()
             << " is a training step; materialize the plan's training "
                "schedule (dist-materialize-schedule without forward=true)";
    eraseListPrograms(module);
    OpBuilder b(&getContext());
    b.setInsertionPointAfter(train);
    schedule::Plan p = plan.toPlan();
    // Dropout: every stage call draws the block of the masks one process
    // draws for the whole batch that its micro-batch's rows are (the call's
    // `dist.microbatch` and the rank's replica say which). Masks keyed by
    // the step (dist-autodiff's) are drawn alike by a recomputed forward;
    // a mask that counts its calls is not.
    MLIRContext *ctx = &getContext();
    for (auto f : module.getOps<func::FuncOp>()) {
      auto group = partition::trainGroupOf(f);
      if (!group)
        continue;
      bool unkeyed = false;
      f.walk([&](graph::DropoutMaskOp m) {
        dist::DistDialect::BatchBlockAttrHelper(ctx).setAttr(
            m, UnitAttr::get(ctx));
        unkeyed |= !m.getStep();
      });
      if (unkeyed && p.recompute == cost::Recompute::Full &&
          group->second == partition::TrainPhase::Forward)
        return f.emitError("dist-partition: the plan recomputes the "
                           "forward (recompute = full) but stage ")
               << group->first
               << "'s forward draws dropout masks without a step counter to "
                  "key them (dist-autodiff's graph.state \"step\"), so a "
                  "second call would draw other masks; plan without "
                  "recomputation or key the masks by the step";
    }
    for (unsigned list = 0; list < (*ir)->schedule.devices.size(); ++list)
      if (failed(partition::buildTrainList(train, **ir, p, list, b)))
        return failure();
    return success();
  }

  static void eraseListPrograms(ModuleOp module) {
    for (auto existing :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (dist::DistDialect::ActionListAttrHelper(module.getContext())
              .isAttrPresent(existing))
        existing.erase();
  }

  LogicalResult run(ModuleOp module) {
    auto plan =
        dist::DistDialect::PlanAttrHelper(&getContext()).getAttr(module);
    if (!plan)
      return emitError(module.getLoc())
             << "dist-partition needs the module's plan ('dist.plan')";
    schedule::RankLayout layout = plan.getLayout();
    schedule::Plan p = plan.toPlan();
    if (p.ep != 1 &&
        !llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp f) {
          return f
              .walk([](dist::AllToAllOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
        }))
      return emitError(module.getLoc())
             << "dist-partition: the plan has ep = " << p.ep
             << " but the function does not exchange tokens over the "
                "expert-parallel ranks; run dist-expert-parallel before "
                "dist-autodiff";
    if (layout.cp != 1 &&
        !llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp f) {
          return f
              .walk([](Operation *op) {
                return op->hasAttr(dist::DistDialect::ContextSplitAttrHelper::
                                       getNameStr())
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
        }))
      return emitError(module.getLoc())
             << "dist-partition: the plan has cp = " << layout.cp
             << " but the function is not split over the context-parallel "
                "ranks; run dist-context-parallel before dist-autodiff";
    if (layout.replicated() && layout.tp != 1)
      return emitError(module.getLoc())
             << "dist-partition: the plan has per-stage replicas with tp = "
             << layout.tp
             << "; per-stage replicas run with one device per replica yet "
                "(tp = 1)";
    if (layout.tp != 1 &&
        !llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp f) {
          bool split = false;
          f.walk([&](Operation *op) {
            split |= op->hasAttr(
                dist::DistDialect::TpShardAttrHelper::getNameStr());
          });
          return split;
        }))
      return emitError(module.getLoc())
             << "dist-partition: the plan has tp = " << layout.tp
             << " but the function is not split over the tensor-parallel "
                "ranks; run dist-tensor-parallel before dist-autodiff";
    FailureOr<func::FuncOp> train = trainingStep(module);
    if (failed(train))
      return failure();
    DenseI64ArrayAttr branchDevices =
        dist::DistDialect::BranchDevicesAttrHelper(&getContext())
            .getAttr(module);
    if (branchDevices && *train)
      return train->emitError("dist-partition: @")
             << train->getSymName()
             << " is a training step but the module has a branch placement "
                "('dist.branch_devices', an inference plan); plan it for "
                "training without --dist-branches";
    if (*train &&
        failed(planning::checkMicrobatchRows(*train, plan, "dist-partition")))
      return failure();
    if (*train)
      return partitionTraining(module, plan, *train);
    FailureOr<func::FuncOp> func =
        planning::plannedFunction(module, "", "dist-partition");
    if (failed(func))
      return failure();
    if (func->getNumResults() == 0 || func->getNumArguments() == 0)
      return func->emitError("dist-partition: @")
             << func->getSymName() << " needs inputs and results";
    if (failed(planning::checkMicrobatchRows(*func, plan, "dist-partition")))
      return failure();
    for (Type t : llvm::concat<const Type>(func->getArgumentTypes(),
                                           func->getResultTypes())) {
      auto r = dyn_cast<RankedTensorType>(t);
      if (!r || !r.hasStaticShape() || r.getRank() == 0)
        return func->emitError("dist-partition: @")
               << func->getSymName() << " has a " << t
               << " input or result; a pipeline streams micro-batches along "
                  "the leading dimension of statically shaped tensors";
    }
    // A branch placement: its pieces form a DAG, no schedule of stages.
    if (branchDevices)
      return partition::partitionBranches(module, *func, plan,
                                          branchDevices.asArrayRef());
    // The schedule, materialized (the forward stream of a forward
    // function) when the module has none.
    if (module.getOps<dist::ScheduleOp>().empty()) {
      OpPassManager pm(ModuleOp::getOperationName());
      MaterializeSchedulePassOptions options;
      options.forward = true;
      pm.addPass(createMaterializeSchedulePass(options));
      if (failed(runPipeline(pm, module)))
        return failure();
    }
    FailureOr<std::optional<partition::ScheduleIR>> ir =
        partition::readScheduleIR(module, plan);
    if (failed(ir) || !*ir)
      return failure();
    if (!(*ir)->schedule.forwardOnly)
      return (*ir)->op.emitOpError("is a training schedule (\"")
             << (*ir)->op.getKind() << "\") but @" << func->getSymName()
             << " is a forward function; its pipeline runs the forward "
                "stream (dist-materialize-schedule{forward=true}, or no "
                "schedule: dist-partition then writes it). To train, run "
                "dist-autodiff first: dist-partition then pipelines "
                "@train_step";
    FailureOr<SmallVector<func::FuncOp>> stages =
        partition::stageFunctions(*func, plan);
    if (failed(stages))
      return failure();
    FailureOr<StageGraph> graph = readStageGraph(*func, *stages);
    if (failed(graph))
      return failure();

    eraseListPrograms(module);
    OpBuilder b(&getContext());
    b.setInsertionPointAfter(*func);
    for (unsigned list = 0; list < (*ir)->schedule.devices.size(); ++list)
      if (failed(buildList(*func, plan, *graph, **ir, list, b)))
        return failure();
    return success();
  }
};
} // namespace
