//===- ScheduleIR.cpp - Schedules between the IR and the cost core -*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/ScheduleIR.h"

#include "dist/Diagnostics.h"
#include "lib/Sim/Simulator.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::partition;
using schedule::Action;
using schedule::ActionKind;

llvm::Expected<schedule::Schedule>
partition::planSchedule(const schedule::Plan &plan) {
  if (plan.mode == schedule::Mode::Infer) {
    if (plan.chunks != 1 || plan.replicated())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "the forward stream runs one chunk per pipeline stage and no "
          "per-stage replicas; plan with chunks=1 and without replicas=");
    return schedule::generateForwardSchedule(plan.pp, plan.numMicrobatches);
  }
  return schedule::generateSchedule(plan.schedule, plan.pp, plan.chunks,
                                    plan.numMicrobatches,
                                    sim::scheduleOptions(plan));
}

std::string partition::scheduleKindName(const schedule::Schedule &s) {
  return s.forwardOnly ? "forward" : schedule::scheduleName(s.kind).str();
}

FailureOr<SmallVector<func::FuncOp>>
partition::stageFunctions(func::FuncOp func, dist::PlanAttr plan) {
  SmallVector<func::FuncOp> stages(plan.getNumVirtualStages());
  auto helper = dist::DistDialect::VirtualStageAttrHelper(func.getContext());
  func.walk([&](func::CallOp call) {
    auto callee =
        SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call,
                                                           call.getCalleeAttr());
    if (!callee)
      return;
    // A training stage is named by its forward function.
    if (StringAttr phase =
            dist::DistDialect::TrainPhaseAttrHelper(func.getContext())
                .getAttr(callee))
      if (phase.getValue() != "forward")
        return;
    if (IntegerAttr v = helper.getAttr(callee))
      if (v.getInt() < static_cast<int64_t>(stages.size()))
        stages[v.getInt()] = callee;
  });
  for (auto [v, f] : llvm::enumerate(stages))
    if (!f)
      return func.emitError("function @")
             << func.getSymName() << " calls no stage function of virtual "
             << "stage " << v << " (of " << stages.size()
             << "); outline its stages first (dist-outline-stages, "
                "dist-outline-stage-functions)";
  return stages;
}

/// Creates the op of one action.
static void buildAction(OpBuilder &b, Location loc, const Action &a,
                        ArrayRef<func::FuncOp> stages, unsigned pp,
                        unsigned stageOfList) {
  auto callee = [&]() {
    func::FuncOp f = stages[a.chunk * pp + stageOfList];
    return FlatSymbolRefAttr::get(f.getSymNameAttr());
  };
  IntegerAttr mb = b.getI64IntegerAttr(a.mb), chunk = b.getI64IntegerAttr(a.chunk),
              peer = b.getI64IntegerAttr(a.peer);
  // Per-iteration actions of one micro-batch (PipeDream).
  IntegerAttr ofMicrobatch = a.mb >= 0 ? mb : IntegerAttr();
  switch (a.kind) {
  case ActionKind::Forward:
    dist::ForwardOp::create(b, loc, callee(), mb);
    return;
  case ActionKind::Backward:
    dist::BackwardOp::create(b, loc, callee(), mb);
    return;
  case ActionKind::BackwardInput:
    dist::BackwardInputOp::create(b, loc, callee(), mb);
    return;
  case ActionKind::BackwardWeight:
    dist::BackwardWeightOp::create(b, loc, callee(), mb);
    return;
  case ActionKind::SendActivation:
    dist::SendActivationOp::create(b, loc, mb, chunk, peer);
    return;
  case ActionKind::RecvActivation:
    dist::RecvActivationOp::create(b, loc, mb, chunk, peer);
    return;
  case ActionKind::SendGrad:
    dist::SendGradOp::create(b, loc, mb, chunk, peer);
    return;
  case ActionKind::RecvGrad:
    dist::RecvGradOp::create(b, loc, mb, chunk, peer);
    return;
  case ActionKind::AllReduce:
    dist::GradAllReduceOp::create(b, loc, ofMicrobatch, chunk);
    return;
  case ActionKind::ReduceScatter:
    dist::GradReduceScatterOp::create(b, loc, ofMicrobatch, chunk);
    return;
  case ActionKind::AllGather:
    dist::ParamAllGatherOp::create(b, loc, ofMicrobatch, chunk);
    return;
  case ActionKind::OptimizerStep:
    dist::OptimizerStepOp::create(b, loc, ofMicrobatch);
    return;
  }
}

dist::ScheduleOp partition::writeSchedule(func::FuncOp func,
                                          dist::PlanAttr plan,
                                          const schedule::Schedule &s,
                                          ArrayRef<func::FuncOp> stages) {
  auto module = func->getParentOfType<ModuleOp>();
  for (auto old :
       llvm::make_early_inc_range(module.getOps<dist::ScheduleOp>()))
    if (old.getFunction() == func.getSymName())
      old.erase();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = func.getLoc();
  auto op = dist::ScheduleOp::create(
      b, loc, FlatSymbolRefAttr::get(func.getSymNameAttr()),
      b.getStringAttr(scheduleKindName(s)),
      b.getI64IntegerAttr(s.microbatches));
  op.getBody().emplaceBlock();
  schedule::RankLayout layout = plan.getLayout();
  for (unsigned l = 0; l < s.devices.size(); ++l) {
    b.setInsertionPointToEnd(&op.getBody().front());
    unsigned stage = s.stageOfList(l);
    // A list's mesh: its stage's devices, or one slot's tp devices.
    dist::MeshAttr mesh = plan.getStageMesh(stage);
    if (layout.replicated()) {
      SmallVector<int64_t> devices;
      for (unsigned t = 0; t < layout.tp; ++t)
        devices.push_back(t + layout.tp * l);
      mesh = dist::MeshAttr::get(func.getContext(),
                                 {1, static_cast<int64_t>(layout.tp)}, devices);
    }
    auto list = dist::ActionsOp::create(b, loc, b.getI64IntegerAttr(l), mesh);
    list.getBody().emplaceBlock();
    b.setInsertionPointToEnd(&list.getBody().front());
    // The actions have no source line: errors on them say where they are
    // in the schedule.
    for (auto [i, a] : llvm::enumerate(s.devices[l]))
      buildAction(b,
                  scheduleLocation(loc, "schedule of @" + func.getSymName() +
                                            ", list " + Twine(l) +
                                            ", action " + Twine(i) + " '" +
                                            a.str() + "'"),
                  a, stages, s.pp, stage);
  }
  return op;
}

FailureOr<std::optional<ScheduleIR>>
partition::readScheduleIR(ModuleOp module, dist::PlanAttr plan) {
  auto ops = module.getOps<dist::ScheduleOp>();
  if (ops.empty())
    return std::optional<ScheduleIR>();
  if (std::next(ops.begin()) != ops.end())
    return (*std::next(ops.begin())).emitOpError(
        "is a second schedule; a module carries the schedule of its planned "
        "function only");
  ScheduleIR ir;
  ir.op = *ops.begin();
  schedule::Plan p = plan.toPlan();
  // The generated schedule of the plan gives the shape (replica tables,
  // the weight versions asynchronous schedules keep); the IR gives the
  // lists.
  llvm::Expected<schedule::Schedule> shape = planSchedule(p);
  if (!shape)
    return ir.op.emitOpError("belongs to a plan whose schedule cannot be "
                             "generated: ")
           << llvm::toString(shape.takeError());
  bool forward = ir.op.getKind() == "forward";
  if (!forward && p.mode == schedule::Mode::Infer)
    return ir.op.emitOpError("is a \"")
           << ir.op.getKind()
           << "\" schedule but the plan is for inference, which runs the "
              "kind \"forward\"";
  // A training plan's stages may also run the forward stream (the
  // inference program of its forward function).
  if (forward && p.mode == schedule::Mode::Train) {
    p.mode = schedule::Mode::Infer;
    shape = planSchedule(p);
    if (!shape)
      return ir.op.emitOpError("belongs to a plan whose forward stream "
                               "cannot be generated: ")
             << llvm::toString(shape.takeError());
  }
  ir.schedule = std::move(*shape);
  if (!ir.schedule.forwardOnly) {
    schedule::ScheduleKind kind;
    (void)schedule::parseScheduleKind(ir.op.getKind(), kind);
    if (kind != p.schedule)
      return ir.op.emitOpError("is a \"")
             << ir.op.getKind() << "\" schedule but the plan's is \""
             << schedule::scheduleName(p.schedule)
             << "\"; materialize the schedule of this plan again";
  }
  for (auto &list : ir.schedule.devices)
    list.clear();
  ir.actions.assign(ir.schedule.devices.size(), {});
  for (auto list : ir.op.getBody().getOps<dist::ActionsOp>()) {
    int64_t l = list.getRank();
    if (l >= static_cast<int64_t>(ir.schedule.devices.size()))
      return list.emitOpError("is list ")
             << l << " but the plan has " << ir.schedule.devices.size()
             << " action lists";
    for (Operation &op : list.getBody().front()) {
      ir.schedule.devices[l].push_back(
          cast<dist::ActionOpInterface>(op).getAction());
      ir.actions[l].push_back(&op);
    }
  }
  return std::optional<ScheduleIR>(std::move(ir));
}

FailureOr<std::optional<schedule::Schedule>>
partition::readSchedule(ModuleOp module, dist::PlanAttr plan) {
  FailureOr<std::optional<ScheduleIR>> ir = readScheduleIR(module, plan);
  if (failed(ir))
    return failure();
  if (!*ir)
    return std::optional<schedule::Schedule>();
  return std::optional<schedule::Schedule>(std::move((*ir)->schedule));
}

void partition::labelAction(Block *entry, Operation *before,
                            const schedule::Action &a) {
  auto label =
      dist::DistDialect::ActionAttrHelper(entry->getParentOp()->getContext());
  StringAttr name;
  for (Operation &op : llvm::make_range(
           before ? std::next(before->getIterator()) : entry->begin(),
           entry->end())) {
    if (label.isAttrPresent(&op))
      continue;
    if (!name)
      name = StringAttr::get(op.getContext(), a.str());
    label.setAttr(&op, name);
  }
}
