//===- Planning.cpp - What the planning passes share -------------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/Planning.h"

#include "dialects/Dist/DistOps.h"
#include "lib/Support/OutputFile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

std::optional<int64_t> planning::microbatchRows(func::FuncOp func) {
  for (Type t : func.getArgumentTypes())
    if (auto r = dyn_cast<RankedTensorType>(t);
        r && r.getRank() > 0 && !r.isDynamicDim(0))
      return r.getDimSize(0);
  return std::nullopt;
}

LogicalResult planning::checkMicrobatchRows(func::FuncOp func,
                                           dist::PlanAttr plan,
                                           StringRef pass) {
  for (BlockArgument arg : func.getArguments()) {
    auto r = dyn_cast<RankedTensorType>(arg.getType());
    if (!r || r.getRank() == 0 || r.isDynamicDim(0) ||
        r.getDimSize(0) == plan.getMbs())
      continue;
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  "graph.name");
    std::string input = name ? name.str() : "#" + std::to_string(
                                                      arg.getArgNumber());
    return func.emitError()
           << pass << ": the plan's micro-batches hold " << plan.getMbs()
           << " rows (mbs = " << plan.getMbs() << ") but @"
           << func.getSymName() << "'s input '" << input << "' holds "
           << r.getDimSize(0)
           << "; the function is one micro-batch: import it with that many "
              "rows (dist-compile --input-shape=NAME:"
           << plan.getMbs() << "x...) or plan mbs = " << r.getDimSize(0);
  }
  return success();
}

/// The functions with a body that could be the planned one: stage
/// functions and per-list programs are parts of it, not candidates.
static SmallVector<func::FuncOp> plannable(ModuleOp module) {
  auto stageAttr =
      dist::DistDialect::VirtualStageAttrHelper(module.getContext());
  auto listAttr = dist::DistDialect::ActionListAttrHelper(module.getContext());
  SmallVector<func::FuncOp> found;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && !stageAttr.isAttrPresent(f) &&
        !listAttr.isAttrPresent(f))
      found.push_back(f);
  return found;
}

func::FuncOp planning::findPlannedFunction(ModuleOp module) {
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    if (!main.isExternal())
      return main;
  SmallVector<func::FuncOp> found = plannable(module);
  return found.size() == 1 ? found.front() : func::FuncOp();
}

FailureOr<func::FuncOp> planning::plannedFunction(ModuleOp module,
                                                  StringRef name,
                                                  StringRef pass) {
  if (!name.empty()) {
    auto f = module.lookupSymbol<func::FuncOp>(name);
    if (!f || f.isExternal())
      return emitError(module.getLoc())
             << pass << ": the module has no function @" << name
             << " with a body to plan";
    return f;
  }
  if (func::FuncOp f = findPlannedFunction(module))
    return f;
  if (plannable(module).empty())
    return emitError(module.getLoc())
           << pass << ": cannot plan: the module has no function with a body";
  return emitError(module.getLoc())
         << pass
         << ": cannot plan: expected a function named 'main' or exactly "
            "one function with a body (name one with func=NAME)";
}

FailureOr<cost::ModelDesc>
planning::modelOf(func::FuncOp func, const Costing &costing, PlannedOps *ops) {
  if (ops)
    for (Operation &op : func.getBody().front())
      if (isa<dist::StageOp, func::CallOp>(op))
        return op.emitOpError("is part of an outlined pipeline; plan the "
                              "function before its stages are outlined "
                              "(dist-outline-stages)");
  LayerAnalysisOptions options;
  // fp8 runs the matmuls in fp8 (the cost model's matmul precision) and
  // everything else in bf16.
  options.computeType = costing.dtype == cluster::DType::F8
                            ? cluster::DType::BF16
                            : costing.dtype;
  options.fusedAttention = costing.fusedAttention;
  options.remarkExperts = costing.remarkExperts;
  if (ops) {
    options.layerOps = &ops->layers;
    options.tpRoles = &ops->roles;
    options.tpDivisors = &ops->tpDivisors;
  }
  return analyzeLayers(func, options);
}

/// True for an op that reads no value and has no region: a weight or state
/// read, a constant, an iota. Outlining clones these into every stage that
/// uses them; one copy is what the program has.
static bool isSource(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->getNumResults() == 1;
}

/// Clones the ops of \p body into \p into (mapping its arguments to
/// \p args) and returns the values of its terminator. Sources already cloned
/// (same name, attributes and type) are reused.
static SmallVector<Value>
inlineBody(Block &body, ValueRange args, OpBuilder &into,
           DenseMap<std::pair<StringRef, Attribute>, Value> &sources) {
  IRMapping map;
  map.map(body.getArguments(), args);
  for (Operation &op : body.without_terminator()) {
    if (isSource(&op)) {
      auto key = std::make_pair(op.getName().getStringRef(),
                                Attribute(op.getAttrDictionary()));
      auto [it, inserted] = sources.try_emplace(key, Value());
      if (!inserted && it->second.getType() == op.getResult(0).getType()) {
        map.map(op.getResult(0), it->second);
        continue;
      }
      it->second = into.clone(op, map)->getResult(0);
      continue;
    }
    into.clone(op, map);
  }
  SmallVector<Value> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(map.lookupOrDefault(v));
  return results;
}

FailureOr<cost::ModelDesc> planning::planningModel(ModuleOp module,
                                                   const Costing &costing) {
  FailureOr<func::FuncOp> func = plannedFunction(module, "", "planning");
  if (failed(func))
    return failure();
  auto stageAttr =
      dist::DistDialect::VirtualStageAttrHelper(module.getContext());
  bool outlined = false;
  for (Operation &op : func->getBody().front()) {
    if (isa<dist::StageOp>(op))
      outlined = true;
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
        outlined |= stageAttr.isAttrPresent(callee);
  }
  if (!outlined)
    return modelOf(*func, costing);
  // Read the stages back into one function of a scratch module.
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(module.getLoc());
  OpBuilder b = OpBuilder::atBlockEnd(scratch->getBody());
  auto flat = func::FuncOp::create(b, func->getLoc(), func->getSymName(),
                                   func->getFunctionType());
  Block *entry = flat.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  map.map(func->getArguments(), entry->getArguments());
  DenseMap<std::pair<StringRef, Attribute>, Value> sources;
  auto mapped = [&](ValueRange values) {
    SmallVector<Value> out;
    for (Value v : values)
      out.push_back(map.lookupOrDefault(v));
    return out;
  };
  for (Operation &op : func->getBody().front()) {
    Block *body = nullptr;
    if (auto stage = dyn_cast<dist::StageOp>(op))
      body = &stage.getBody().front();
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
        if (stageAttr.isAttrPresent(callee))
          body = &callee.getBody().front();
    if (!body) {
      b.clone(op, map);
      continue;
    }
    SmallVector<Value> results =
        inlineBody(*body, mapped(op.getOperands()), b, sources);
    map.map(op.getResults(), results);
  }
  return modelOf(flat, costing);
}

FailureOr<ModuleMachine> planning::moduleMachine(ModuleOp module,
                                                 StringRef pass) {
  auto attr = dist::DistDialect::ClusterAttrHelper(module.getContext())
                  .getAttr(module);
  if (!attr)
    return emitError(module.getLoc())
           << "planning needs a cluster: pass --dist-cluster=PRESET:NODES, "
              "--dist-cluster=FILE.yaml or --dist-cluster=local (this "
              "machine; see --list-clusters; the dist-attach-cluster pass, "
              "before "
           << pass << ")";
  ModuleMachine m;
  m.cluster = attr.toCluster();
  if (llvm::Error err = cluster::validateCluster(m.cluster, "dist.cluster"))
    return emitError(module.getLoc())
           << pass << ": " << llvm::toString(std::move(err));
  if (!attr.getProfile().empty()) {
    llvm::Expected<cost::ProfileDB> db =
        cost::ProfileDB::load(attr.getProfile());
    if (!db)
      return emitError(module.getLoc())
             << pass << ": " << llvm::toString(db.takeError());
    m.profile = std::move(*db);
  }
  return m;
}

FailureOr<PlanningInputs> planning::planningInputs(ModuleOp module,
                                                   const Costing &costing,
                                                   StringRef pass) {
  PlanningInputs in;
  FailureOr<func::FuncOp> func = plannedFunction(module, "", pass);
  if (failed(func))
    return failure();
  in.func = *func;
  FailureOr<ModuleMachine> machine = moduleMachine(module, pass);
  if (failed(machine))
    return failure();
  in.machine = std::move(*machine);
  // The plan's own costing says what it recognized (once per pass).
  Costing remarked = costing;
  remarked.remarkExperts = true;
  FailureOr<cost::ModelDesc> model = modelOf(in.func, remarked, &in.ops);
  if (failed(model))
    return failure();
  in.model = std::move(*model);
  return in;
}

void planning::recordPlan(ModuleOp module, const schedule::Plan &plan,
                          const PlannedOps &ops) {
  MLIRContext *ctx = module.getContext();
  auto *dialect = ctx->getOrLoadDialect<dist::DistDialect>();
  dialect->getPlanAttrHelper().setAttr(module, dist::PlanAttr::get(ctx, plan));
  Builder b(ctx);
  unsigned numLayers = ops.layers.size();
  for (unsigned vs = 0; vs < plan.numVirtualStages(); ++vs)
    for (unsigned l = plan.stageLayers(vs, numLayers).first;
         l < plan.stageLayers(vs, numLayers).second; ++l)
      for (Operation *op : ops.layers[l])
        dialect->getVirtualStageAttrHelper().setAttr(op,
                                                     b.getI64IntegerAttr(vs));
  if (plan.tp > 1)
    for (auto &[op, role] : ops.roles) {
      // A region or lookup the degree does not divide runs whole, as the
      // cost model prices it (cost::OpDesc::tpMode).
      int64_t divisor = ops.tpDivisors.lookup(op);
      dist::TensorParallelRole planned =
          divisor && divisor % plan.tp ? dist::TensorParallelRole::Replicated
                                       : role;
      dialect->getTpAttrHelper().setAttr(
          op, dist::TensorParallelRoleAttr::get(ctx, planned));
    }
}

LogicalResult
planning::writeFile(ModuleOp module, StringRef path, StringRef what,
                    llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return emitError(module.getLoc())
           << "cannot write the " << what << " to '" << path
           << "': " << ec.message();
  write(os);
  std::string problem = closeOutput(os, path);
  if (!problem.empty())
    return emitError(module.getLoc()) << problem << " (the " << what << ")";
  return success();
}

std::string planning::humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  return llvm::formatv("{0:F1} {1}", bytes, units[u]).str();
}

void planning::warnNotes(StringRef what,
                         const std::vector<std::string> &notes) {
  for (const std::string &n : notes)
    llvm::WithColor::warning(llvm::errs()) << what << ": " << n << "\n";
}

FailureOr<exporting::ImportedPlan>
planning::readTrainerPlan(ModuleOp module, StringRef spec,
                          const Costing &costing, unsigned batch,
                          StringRef pass) {
  StringRef option = "--dist-plan-from";
  llvm::Expected<exporting::TrainerSpec> parsed =
      exporting::parseTrainerSpec(spec);
  if (!parsed)
    return emitError(module.getLoc())
           << "bad " << option << "='" << spec
           << "': " << llvm::toString(parsed.takeError());
  if (parsed->file.empty())
    return emitError(module.getLoc())
           << option << "='" << spec << "' names no file: write "
           << exporting::trainerName(parsed->trainer) << ":ARGS_FILE";
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(parsed->file, /*IsText=*/true);
  if (!buffer)
    return emitError(module.getLoc())
           << option << ": cannot read '" << parsed->file
           << "': " << buffer.getError().message();
  // The configuration counts stages in transformer blocks.
  FailureOr<PlanningInputs> in = planningInputs(module, costing, pass);
  if (failed(in))
    return failure();
  llvm::Expected<exporting::ImportedPlan> plan = exporting::importPlan(
      parsed->trainer, (*buffer)->getBuffer(), parsed->file, in->model,
      in->machine.cluster.numDevices());
  if (!plan)
    return emitError(module.getLoc())
           << option << ": " << llvm::toString(plan.takeError());
  if (batch && plan->globalBatch && batch != plan->globalBatch)
    return emitError(module.getLoc())
           << "--dist-batch=" << batch << " and " << spec
           << "'s --global-batch-size " << plan->globalBatch
           << " differ: drop --dist-batch";
  if (!plan->globalBatch)
    plan->globalBatch = batch;
  warnNotes(spec, plan->notes);
  return std::move(*plan);
}
