//===- EmitPipeline.cpp - Per-list programs to one executable --*- C++ -*-===//
//
// Part of DistOpt. Prints a partitioned module (dist-partition:
// docs/partition.md) as ONE program every rank of the job runs:
//
//  - each stage function becomes `static int <name>(P, in, out)`: its
//    arguments are copied from the caller's buffers `in[j]` into its arena
//    slots, and its results into the caller's buffers `out[k]` (the
//    caller's arena slots for the call's results): a stage's arena is kept
//    and reused by its next call, so nothing the caller holds may live in
//    it, and every value is where dist-prepare-for-emission's plan says;
//  - each per-list program `@<f>_rank<L>` becomes `static int rankL(P)`:
//    its actions in the schedule's order (stage calls, dist.send/dist.recv
//    lowered by EmitComm, micro-batch split and merge);
//  - a training step's programs write their updates back to the weights
//    and state they own; list 0 returns the step's outputs (the loss);
//  - `run` looks up this rank's action list and runs its program; `peers`
//    gives, for each rank and action list, the list's device with the
//    rank's data-parallel replica and tensor coordinates;
//  - with data-parallel replicas of the stages, inputs marked
//    `dist.batch_shard` hold every replica's rows and `replicaOf` says
//    whose a rank keeps.
//
// Every decision about order, transfers and micro-batches is in the IR;
// this file only prints it.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/KernelRules.h"
#include "dialects/Emit/MemoryPlan.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace distopt::codegen;
namespace dist = distopt::dist;
namespace emit = distopt::emit;
namespace graph = distopt::graph;

/// The per-list programs of \p module, by list index.
static SmallVector<func::FuncOp> listPrograms(ModuleOp module) {
  auto helper = dist::DistDialect::ActionListAttrHelper(module.getContext());
  SmallVector<func::FuncOp> out;
  for (auto f : module.getOps<func::FuncOp>())
    if (IntegerAttr l = helper.getAttr(f)) {
      if (out.size() <= (size_t)l.getInt())
        out.resize(l.getInt() + 1);
      out[l.getInt()] = f;
    }
  return out;
}

bool distopt::codegen::isPipelined(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  return module && !listPrograms(module).empty();
}

/// The name of \p v's argument or result `k` (ONNX names when imported).
static std::string ioName(func::FuncOp f, unsigned k, bool result) {
  auto n = result ? f.getResultAttrOfType<StringAttr>(k, "graph.name")
                  : f.getArgAttrOfType<StringAttr>(k, "graph.name");
  if (!n && result)
    n = f.getResultAttrOfType<StringAttr>(k, "graph.output");
  return n ? n.str() : (result ? "out" : "arg") + std::to_string(k);
}

/// Checks that \p t is what a .npy file carries; inputs have a batch
/// dimension (dim 0) the pipeline splits into micro-batches.
static LogicalResult checkIO(Operation *at, Type t, llvm::StringRef what,
                             llvm::StringRef name, bool batched) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r || !r.hasStaticShape() || (batched && r.getRank() == 0) ||
      FunctionEmitter::dgType(r.getElementType()).empty())
    return at->emitError()
           << "dist-compile: " << what << " '" << name << "' has type " << t
           << "; pipeline inputs are statically shaped tensors with a batch "
              "dimension (dim 0), outputs statically shaped tensors, of a "
              ".npy element type (pin shapes with --input-shape=NAME:D0xD1...)";
  return success();
}

/// Whether result \p k of \p fn is a weight or state update.
static bool isUpdate(func::FuncOp fn, unsigned k) {
  return static_cast<bool>(fn.getResultAttr(k, "graph.update"));
}

/// The indices of \p fn's results that are outputs (not updates).
static SmallVector<unsigned> outputIndices(func::FuncOp fn) {
  SmallVector<unsigned> out;
  for (unsigned k = 0; k < fn.getNumResults(); ++k)
    if (!isUpdate(fn, k))
      out.push_back(k);
  return out;
}

/// The C++ name of stage function \p fn: its position among \p stages.
static std::string stageName(func::FuncOp fn,
                             const llvm::SetVector<func::FuncOp> &stages) {
  return "stage" + std::to_string(llvm::find(stages, fn) - stages.begin());
}

/// The results of a stage body the plan computes straight into the
/// caller's buffers (`out[k]`, emit.buffer `result`), saving a copy per call
/// (a weight gradient per micro-batch).
static llvm::DenseMap<Value, unsigned> directResults(Block &body) {
  llvm::DenseMap<Value, unsigned> slots;
  for (auto [k, v] : llvm::enumerate(body.getTerminator()->getOperands()))
    if (emit::BufferAttr b = emit::bufferOf(v); b && b.isResult())
      slots[v] = static_cast<unsigned>(k);
  return slots;
}

/// `static int <name>(dg::Program &P, void *const *in, void **out)`;
/// \p training when the module is a training step.
/// \p arena, \p arenaBytes: the arena the module's stage functions share.
static LogicalResult
emitStageFunction(func::FuncOp fn, llvm::StringRef name, llvm::StringRef prefix,
                  llvm::StringRef arena, int64_t arenaBytes, bool training,
                  const CodegenOptions &options, std::string &text,
                  std::string &globals,
                  std::vector<FunctionEmitter::ProfiledOp> &profiled) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "dist-compile: stage function @"
                          << fn.getSymName() << " must have a single block";
  Block &body = fn.getBody().front();
  std::string bodyText;
  llvm::raw_string_ostream bodyOS(bodyText), globalOS(globals);
  FunctionEmitter e(bodyOS, globalOS, options, prefix.str());
  e.arenaName = arena.str();
  e.arenaBytes = arenaBytes;
  // Weights are loaded once and kept across micro-batches: a training
  // step's in the rank's persistent (saved, updated) state, a forward
  // pipeline's as the plan's resident buffers, constant as in a
  // single-device program (convolutions tell oneDNN so).
  e.training = training;
  e.profiled = &profiled;
  if (failed(requireMemoryPlan(fn)))
    return failure();
  computeFusion(body, e.fused);
  e.computeLifetimes(body);
  e.resultSlots = directResults(body);
  for (BlockArgument arg : body.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || !t.hasStaticShape() || FunctionEmitter::cType(arg).empty())
      return fn.emitError()
             << "dist-compile: stage @" << fn.getSymName() << " input #"
             << arg.getArgNumber() << " has type " << arg.getType()
             << "; values crossing stage boundaries must be statically "
                "shaped tensors";
    // The plan reads a stage's arguments where the caller holds them
    // (`argument`); one given an arena slot is copied in.
    e.allocate(arg);
    emit::BufferAttr b = emit::bufferOf(arg);
    if (b && b.isArena())
      bodyOS << "  if (P.copy(" << e.name(arg) << ", in[" << arg.getArgNumber()
             << "], " << FunctionEmitter::bytesOf(arg) << ")) return 1;\n";
  }
  for (Operation &op : body) {
    e.waitFor(isa<func::ReturnOp>(op) ? nullptr : &op);
    if (auto ret = dyn_cast<func::ReturnOp>(&op)) {
      // Results go to the caller's buffers: each lives in this stage's
      // arena (reused by the next call), in a weight or state buffer, or
      // in an argument's slot, and two may share one (a result returned
      // twice, or a view of another).
      for (auto [k, v] : llvm::enumerate(ret.getOperands()))
        if (!e.resultSlots.contains(v))
          bodyOS << "  if (P.copy(out[" << k << "], " << e.name(v) << ", "
                 << FunctionEmitter::bytesOf(v) << ")) return 1;\n";
      continue;
    }
    if (isa<dist::StageOp, func::CallOp>(&op))
      return op.emitError() << "dist-compile: '" << op.getName()
                            << "' inside stage function @" << fn.getSymName()
                            << "; stages do not nest";
    if (failed(e.emitProfiled(&op)))
      return failure();
  }
  text += "static int " + name.str() + "(dg::Program &P, void *const *in, " +
          "void **out) {\n  // @" + fn.getSymName().str() + "\n  (void)in;\n  "
          "(void)out;\n" +
          bodyText + "  return 0;\n}\n";
  return success();
}

/// How list \p list's stage calls find their block of the whole batch
/// (dg::Program::batchBlock): a replica's rows of the `dist.batch_shard`
/// inputs are its block of the replicas' (P.replica of P.replicas, from the
/// table that shards the inputs), its m micro-batches blocks of those;
/// without sharded inputs (dp = 1, per-stage replicas) the micro-batches
/// are blocks of the whole batch. The C++ of this rank's first block (a
/// call of micro-batch mb computes that plus mb) and of the block count.
static std::pair<std::string, std::string> batchBlocksOf(func::FuncOp list) {
  auto module = list->getParentOfType<ModuleOp>();
  std::string m = std::to_string(
      dist::DistDialect::PlanAttrHelper(module.getContext())
          .getAttr(module)
          .getMicrobatches());
  bool sharded = llvm::any_of(
      llvm::seq(list.getNumArguments()),
      [&](unsigned k) { return list.getArgAttr(k, "dist.batch_shard"); });
  if (!sharded)
    return {"0ull", m + "ull"};
  return {"(uint64_t)P.replica * " + m + "ull",
          "(uint64_t)P.replicas * " + m + "ull"};
}

/// `static int rank<L>(dg::Program &P)`: the program of one action list.
static LogicalResult
emitListProgram(func::FuncOp fn, unsigned list,
                const llvm::SetVector<func::FuncOp> &stages,
                llvm::StringRef prefix, const CodegenOptions &options,
                std::string &text, std::string &globals,
                std::vector<FunctionEmitter::ProfiledOp> &profiled) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "dist-compile: @" << fn.getSymName()
                          << " must have a single block";
  Block &body = fn.getBody().front();
  auto module = fn->getParentOfType<ModuleOp>();
  std::string bodyText;
  llvm::raw_string_ostream bodyOS(bodyText), globalOS(globals);
  FunctionEmitter e(bodyOS, globalOS, options, prefix.str());
  // A training step's program keeps weights and state in persistent
  // buffers and writes its updates back.
  for (unsigned k = 0; k < fn.getNumResults(); ++k)
    e.training |= isUpdate(fn, k);
  e.profiled = &profiled;
  if (failed(requireMemoryPlan(fn)))
    return failure();
  computeFusion(body, e.fused);
  e.computeLifetimes(body);
  if (e.training)
    e.updatesInPlace = inPlaceUpdates(fn, e.fused);
  for (BlockArgument arg : body.getArguments()) {
    if (failed(checkIO(fn, arg.getType(), "input",
                       ioName(fn, arg.getArgNumber(), false), true)))
      return failure();
    e.allocate(arg);
    bodyOS << "  if (P.upload(" << e.name(arg) << ", P.inputs["
           << arg.getArgNumber() << "].data.data(), P.inputs["
           << arg.getArgNumber() << "].data.size())) return 1;\n";
  }
  auto [firstBlock, blocks] = batchBlocksOf(fn);
  bodyOS << "  const uint64_t firstBlock = " << firstBlock
         << ";\n  (void)firstBlock;\n  P.batchBlocks = " << blocks << ";\n";
  unsigned calls = 0;
  // The executor's trace (--trace): the time from an op of one schedule
  // action (`dist.action`) to the first op of the next is that action's.
  std::string action;
  auto label = dist::DistDialect::ActionAttrHelper(fn.getContext());
  for (Operation &op : body) {
    if (StringAttr name = label.getAttr(&op);
        name && name.getValue() != action) {
      action = name.getValue().str();
      bodyOS << "  P.traceAction(\"" << action << "\");\n";
    }
    e.waitFor(isa<func::ReturnOp>(op) ? nullptr : &op);
    if (auto ret = dyn_cast<func::ReturnOp>(&op)) {
      if (!action.empty())
        bodyOS << "  P.traceAction(nullptr);\n";
      unsigned slot = 0;
      for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
        if (auto upd = fn.getResultAttrOfType<StringAttr>(k, "graph.update")) {
          if (!e.updatesInPlace.contains(v))
            emitUpdateWriteBack(e, upd.getValue(), v);
          continue;
        }
        bodyOS << "  if (P.download(P.outputs[" << slot << "].data.data(), "
               << e.name(v) << ", P.outputs[" << slot
               << "].data.size())) return 1;\n";
        ++slot;
      }
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(&op)) {
      // The stage writes its results into their slots of this arena.
      std::string c = "c" + std::to_string(calls++);
      bodyOS << "  // " << FunctionEmitter::where(&op) << "\n";
      if (auto mb = dist::DistDialect::MicrobatchAttrHelper(fn.getContext())
                        .getAttr(call))
        bodyOS << "  P.batchBlock = firstBlock + " << mb.getInt() << "ull;\n";
      for (Value r : call.getResults())
        e.allocate(r);
      // A running sum (`dist.accumulates = k`) is passed in result k's
      // buffer, which the stage adds to: the plan gave both one slot, or
      // the sum is copied there first.
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      SmallVector<std::string> args;
      for (auto [j, v] : llvm::enumerate(call.getOperands())) {
        std::optional<unsigned> k = emit::accumulatedResult(callee, j);
        if (!k) {
          args.push_back(e.name(v));
          continue;
        }
        Value r = call.getResult(*k);
        std::optional<int64_t> at = emit::arenaOffset(r);
        if (!at || emit::arenaOffset(v) != at)
          bodyOS << "  if (P.copy(" << e.name(r) << ", " << e.name(v) << ", "
                 << FunctionEmitter::bytesOf(v) << ")) return 1;\n";
        args.push_back(e.name(r));
      }
      bodyOS << "  void *" << c << "in[" << call.getNumOperands() + 1
             << "] = {";
      for (const std::string &a : args)
        bodyOS << "(void *)" << a << ", ";
      bodyOS << "nullptr};\n  void *" << c << "out["
             << call.getNumResults() + 1 << "] = {";
      for (Value r : call.getResults())
        bodyOS << "(void *)" << e.name(r) << ", ";
      bodyOS << "nullptr};\n  if (" << stageName(callee, stages) << "(P, " << c
             << "in, " << c << "out)) return 1;\n";
      continue;
    }
    if (failed(e.emitProfiled(&op)))
      return failure();
  }
  text += "static int rank" + std::to_string(list) + "(dg::Program &P) {\n" +
          bodyText + "  return 0;\n}\n";
  return success();
}

LogicalResult distopt::codegen::emitPipelineModel(const ModelUnit &model,
                                                  Operation *funcOp,
                                                  llvm::StringRef ns,
                                                  const CodegenOptions &options,
                                                  llvm::raw_ostream &out) {
  auto func = cast<func::FuncOp>(funcOp);
  auto module = func->getParentOfType<ModuleOp>();
  auto plan = dist::DistDialect::PlanAttrHelper(module.getContext())
                  .getAttr(module);
  if (!plan)
    return module.emitError() << "dist-compile: a partitioned module needs its "
                                 "plan ('dist.plan')";
  distopt::schedule::RankLayout layout = plan.getLayout();
  SmallVector<func::FuncOp> lists = listPrograms(module);
  unsigned numLists =
      layout.replicated() ? layout.numSlots() : static_cast<unsigned>(layout.pp);
  if (lists.size() != numLists || llvm::is_contained(lists, func::FuncOp()))
    return module.emitError()
           << "dist-compile: the module has programs for " << lists.size()
           << " action lists but its plan has " << numLists
           << "; partition it again (dist-partition)";

  // The stage functions the programs call, each printed once.
  std::string stageText, listText, globals;
  llvm::SetVector<func::FuncOp> stages;
  for (func::FuncOp fn : lists)
    fn.walk([&](func::CallOp call) {
      if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
        stages.insert(callee);
    });
  bool training = llvm::any_of(lists, updatesWeights);
  // `--profile`: one op table for every rank's ops; a rank times the ops
  // of its stages' calls (each call adds to its ops) and of its list.
  std::vector<FunctionEmitter::ProfiledOp> profiled;
  // The stage functions share one arena, the largest plan's: a rank calls
  // them one at a time, and between calls nothing lives in it (results
  // are in the caller's buffers, weights and state resident).
  int64_t stageArena = 0;
  for (func::FuncOp stage : stages)
    if (auto memory =
            stage->getAttrOfType<emit::MemoryPlanAttr>(emit::kMemoryPlanAttr))
      stageArena = std::max(stageArena, memory.getArena());
  for (auto [k, stage] : llvm::enumerate(stages))
    if (failed(emitStageFunction(stage, stageName(stage, stages),
                                 (ns + "s" + std::to_string(k)).str(),
                                 (ns + "stages").str(), stageArena, training,
                                 options, stageText, globals, profiled)))
      return failure();

  // The programs; the one returning values holds the outputs.
  func::FuncOp outputList;
  unsigned outputIndex = 0;
  for (auto [l, fn] : llvm::enumerate(lists)) {
    if (failed(emitListProgram(fn, l, stages,
                               (ns + "r" + std::to_string(l)).str(), options,
                               listText, globals, profiled)))
      return failure();
    if (outputIndices(fn).empty())
      continue;
    if (outputList)
      return fn.emitError() << "dist-compile: lists " << outputIndex << " and "
                            << l << " both return outputs; one list runs the "
                                    "last stage";
    outputList = fn;
    outputIndex = l;
  }
  if (!outputList)
    return module.emitError()
           << "dist-compile: no action list returns the outputs";
  SmallVector<unsigned> outs = outputIndices(outputList);
  for (unsigned k : outs)
    if (failed(checkIO(outputList, outputList.getResultTypes()[k], "output",
                       ioName(outputList, k, true), false)))
      return failure();

  // Which list each rank runs, and each list's device with a rank's
  // coordinates.
  unsigned world = static_cast<unsigned>(layout.numDevices());
  std::string listOf, peers, replicaOf;
  for (unsigned r = 0; r < world; ++r) {
    auto c = *layout.coordOf(r);
    replicaOf += (r ? ", " : "") + std::to_string(c.replica);
    unsigned list = layout.replicated() ? r / layout.tp : c.stage;
    listOf += (r ? ", " : "") + std::to_string(list);
    peers += "    {";
    for (unsigned l = 0; l < numLists; ++l) {
      unsigned peer =
          layout.replicated()
              ? c.tensor + layout.tp * l
              : layout.globalRank(l, c.replica, c.tensor, c.context);
      peers += (l ? ", " : "") + std::to_string(peer);
    }
    peers += "},\n";
  }
  unsigned outputRank =
      layout.replicated() ? layout.tp * outputIndex
                          : layout.globalRank(outputIndex, 0, 0);

  // Data parallelism inside the stages: inputs marked `dist.batch_shard`
  // hold every replica's rows, and a rank keeps its replica's.
  std::string shards;
  bool sharded = false;
  for (unsigned k = 0; k < outputList.getNumArguments(); ++k) {
    bool shard = static_cast<bool>(
        outputList.getArgAttr(k, "dist.batch_shard"));
    sharded |= shard;
    shards += (k ? ", " : "") + std::string(shard ? "1" : "0");
  }

  out << "namespace " << ns << " {\n"
      << "static const int listOf[" << world << "] = {" << listOf << "};\n"
      << "static const int peers[" << world << "][" << numLists << "] = {\n"
      << peers << "};\n"
      << globals << stageText << listText
      << "static int run(dg::Program &P) {\n  switch (listOf[P.rank]) {\n";
  for (unsigned l = 0; l < numLists; ++l)
    out << "  case " << l << ":\n    if (rank" << l
        << "(P)) return 1;\n    break;\n";
  out << "  }\n  P.releaseAll();\n  return 0;\n}\n";
  SmallVector<std::string> inNames, outNames;
  for (unsigned k = 0; k < outputList.getNumArguments(); ++k)
    inNames.push_back(ioName(outputList, k, false));
  auto ret = cast<func::ReturnOp>(outputList.getBody().front().getTerminator());
  SmallVector<Value> outValues;
  for (unsigned k : outs) {
    outNames.push_back(ioName(outputList, k, true));
    outValues.push_back(ret.getOperand(k));
  }
  ModelTableFields fields;
  if (sharded) {
    out << "static const int shards[] = {" << shards << "};\n"
        << "static const int replicaOf[" << world << "] = {" << replicaOf
        << "};\n";
    fields.shards = "shards";
    fields.replicaOf = "replicaOf";
    fields.replicas = layout.dp;
  }
  fields.collectives = true;
  fields.trains = training;
  fields.world = world;
  fields.outputRank = outputRank;
  // One stage, one micro-batch, no data parallelism: each rank runs each op
  // of the step once, so its --profile-json is a profile database.
  if (layout.pp == 1 && layout.dp == 1 && !layout.replicated() &&
      layout.tp > 1 && plan.getMicrobatches() == 1)
    fields.profileTp = layout.tp;
  emitOpTable(out, profiled);
  if (!profiled.empty()) {
    fields.ops = "ops";
    fields.numOps = profiled.size();
  }
  emitModelTable(out, model, outputList.getArguments(), inNames, outValues,
                 outNames, fields);
  out << "} // namespace " << ns << "\n\n";
  return success();
}
