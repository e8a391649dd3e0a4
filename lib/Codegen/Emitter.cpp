//===- Emitter.cpp - Program and model emission -----------------*- C++ -*-===//
//
// Part of DistOpt. Walks a model's `main` function in order and hands each op
// to its family's emitter; writes the model's input/output specs and the
// program's `main`, which parses the command line (distrt_gen.h).
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/Codegen.h"
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Emit/MemoryPlan.h"
#include "dialects/Graph/GraphOps.h"
#include "dist/Diagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace emit = distopt::emit;
using namespace distopt::codegen;

static std::string escape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += ((unsigned char)c < 32) ? ' ' : c;
  }
  return out;
}

/// The function to compile: `main`, or the module's only function.
static func::FuncOp findMain(ModuleOp module, llvm::StringRef want) {
  func::FuncOp main, only;
  unsigned count = 0;
  if (want.empty())
    want = "main";
  module.walk([&](func::FuncOp f) {
    ++count;
    only = f;
    if (f.getSymName() == want)
      main = f;
  });
  return main ? main : (count == 1 ? only : func::FuncOp());
}

static std::string spec(Value v, llvm::StringRef name) {
  auto t = FunctionEmitter::typeOf(v);
  std::string s = "{\"" + escape(name) + "\", " +
                  FunctionEmitter::dgType(t.getElementType()) + ", " +
                  std::to_string(t.getRank()) + ", {";
  for (int64_t i = 0; i < t.getRank(); ++i)
    s += (i ? ", " : "") + std::to_string(t.getShape()[i]);
  return s + "}}";
}

void distopt::codegen::emitModelTable(llvm::raw_ostream &out,
                                      const ModelUnit &model,
                                      ValueRange inputs,
                                      llvm::ArrayRef<std::string> inNames,
                                      ValueRange outputs,
                                      llvm::ArrayRef<std::string> outNames,
                                      const ModelTableFields &f) {
  if (!inNames.empty()) {
    out << "static const dg::TensorSpec inputs[] = {\n";
    for (auto [k, v] : llvm::enumerate(inputs))
      out << "    " << spec(v, inNames[k]) << ",\n";
    out << "};\n";
  }
  if (!outNames.empty()) {
    out << "static const dg::TensorSpec outputs[] = {\n";
    for (auto [k, v] : llvm::enumerate(outputs))
      out << "    " << spec(v, outNames[k]) << ",\n";
    out << "};\n";
  }
  // The ranks of a job compare this hash of the compiled IR (function
  // chosen included) before the first step (distrt/gen/Main.h).
  std::string ir;
  llvm::raw_string_ostream irOS(ir);
  irOS << model.funcName << "\n";
  mlir::ModuleOp(model.module).print(irOS);
  out << "static const dg::Model model = {\"" << escape(model.name) << "\", \""
      << escape(model.source) << "\", \"" << escape(model.modelDir) << "\", "
      << inNames.size() << ", " << (inNames.empty() ? "nullptr" : "inputs")
      << ", " << outNames.size() << ", "
      << (outNames.empty() ? "nullptr" : "outputs") << ", " << f.run << ", "
      << f.apply << ", " << f.accumulation << ", "
      << (f.collectives ? "true" : "false") << ", " << f.shards << ", "
      << f.replicaOf << ", " << f.replicas << ", " << f.world << ", "
      << f.outputRank << ", "
      << llvm::format("0x%016llxull", (unsigned long long)llvm::xxh3_64bits(ir))
      << ", " << f.ops << ", " << f.numOps << ", " << f.profileTp << ", "
      << (f.trains ? "true" : "false") << "};\n";
}

bool distopt::codegen::updatesWeights(func::FuncOp fn) {
  return llvm::any_of(llvm::seq(fn.getNumResults()), [&](unsigned k) {
    return static_cast<bool>(fn.getResultAttr(k, "graph.update"));
  });
}

LogicalResult distopt::codegen::requireMemoryPlan(Operation *func) {
  if (func->hasAttr(emit::kMemoryPlanAttr))
    return success();
  return func->emitError()
         << "dist-compile: @" << cast<func::FuncOp>(func).getSymName()
         << " has no emit.memory_plan; the printer emits what "
            "dist-prepare-for-emission decided (run it first)";
}

void distopt::codegen::emitUpdateWriteBack(FunctionEmitter &e,
                                           llvm::StringRef name, Value v) {
  auto t = FunctionEmitter::typeOf(v);
  std::string dims = "{";
  for (int64_t d : t.getShape())
    dims += std::to_string(d) + ", ";
  e.os << "  { static const int64_t dims[] = " << dims
       << "0}; bool fresh = false;\n    void *dst = P.persistentBuffer(\""
       << escape(name) << "\", " << FunctionEmitter::dgType(t.getElementType())
       << ", " << t.getRank() << ", dims, fresh);\n    if (!dst || P.copy(dst, "
       << e.name(v) << ", "
       << t.getNumElements() * FunctionEmitter::byteSize(t.getElementType())
       << ")) return 1; }\n";
}

void distopt::codegen::emitOpTable(
    llvm::raw_ostream &out, llvm::ArrayRef<FunctionEmitter::ProfiledOp> ops) {
  if (ops.empty())
    return;
  out << "static const dg::OpInfo ops[] = {\n";
  for (const FunctionEmitter::ProfiledOp &o : ops)
    out << "    {\"" << escape(o.kind) << "\", \"" << o.where << "\", \""
        << escape(o.signature) << "\", \"" << escape(o.phase) << "\", "
        << o.instance << ", " << o.updated << "},\n";
  out << "};\n";
}

/// What `--profile` calls an op's kind: the graph op, or for a kernel its
/// anchor (post_ops) or yielded op (loop, eltwise) and how it ran.
static std::string kindOf(Operation *op) {
  auto kernel = dyn_cast<emit::KernelOp>(op);
  if (!kernel)
    return op->getName().getStringRef().str();
  Operation *main = kernel.getKind() == emit::KernelKind::post_ops
                        ? kernel.getAnchor()
                        : kernel.getRoot();
  std::string name = main ? main->getName().getStringRef().str() : "kernel";
  switch (kernel.getKind()) {
  case emit::KernelKind::loop:
    return "loop (" + name +
           (kernel.getBody().front().getOperations().size() > 2 ? ", fused"
                                                                : "") +
           ")";
  case emit::KernelKind::eltwise:
    return name + " (eltwise kernel)";
  case emit::KernelKind::post_ops:
    return name + " + post-ops";
  }
  return name;
}

/// The op whose cost-model attributes stand for `op`: for a kernel its
/// anchor (post_ops) or root, else `op` itself (null for a kernel without
/// either).
static Operation *costedOp(Operation *op) {
  auto kernel = dyn_cast<emit::KernelOp>(op);
  if (!kernel)
    return op;
  Operation *main = kernel.getKind() == emit::KernelKind::post_ops
                        ? kernel.getAnchor()
                        : kernel.getRoot();
  return main ? costedOp(main) : nullptr;
}

/// The cost-model signature of `op` (for a kernel, of its anchor or root).
static std::string signatureOf(Operation *op) {
  Operation *main = costedOp(op);
  auto sig = main ? main->getAttrOfType<StringAttr>(emit::kCostSignatureAttr)
                  : nullptr;
  return sig ? sig.str() : "";
}

/// The profile instance of `op` (emit.cost_instance), or -1.
static int64_t instanceOf(Operation *op) {
  Operation *main = costedOp(op);
  auto n = main ? main->getAttrOfType<IntegerAttr>(emit::kCostInstanceAttr)
                : nullptr;
  return n ? n.getInt() : -1;
}

LogicalResult FunctionEmitter::emitProfiled(Operation *op) {
  // Ops that emit no code of their own per run (views; resident weights
  // and constants, filled on the first run only) are not timed.
  emit::BufferAttr b =
      op->getNumResults() ? emit::bufferOf(op->getResult(0)) : nullptr;
  if (!profiled || (b && (b.isView() || b.isResident())))
    return emitOp(*this, op);
  size_t id = profiled->size();
  ProfiledOp row;
  row.kind = kindOf(op);
  row.where = where(op);
  Operation *costed = costedOp(op);
  row.signature = signatureOf(op);
  row.instance = instanceOf(op);
  if (isa_and_nonnull<graph::SgdUpdateOp, graph::AdamUpdateOp>(costed))
    row.updated = cast<ShapedType>(costed->getResult(0).getType())
                      .getNumElements();
  // A kernel takes the phase of the op it stands for (its anchor or root).
  for (Operation *o : {op, costed})
    if (auto phase = o ? o->getAttrOfType<StringAttr>("graph.phase") : nullptr)
      if (row.phase.empty())
        row.phase = phase.str();
  profiled->push_back(row);
  os << "  const dg::ProfClocks pt" << id << " = P.profStart();\n";
  if (failed(emitOp(*this, op)))
    return failure();
  os << "  P.profStop(" << id << ", pt" << id << ");\n";
  // A started all-reduce's wait is timed under the same row.
  if (!started.empty() && op->getNumResults() &&
      started.back().value == op->getResult(0))
    started.back().row = static_cast<int64_t>(id);
  return success();
}

std::string FunctionEmitter::startRequest(Operation *op) {
  std::string request = "rq" + std::to_string(counter++);
  os << "  distrt_request *" << request << " = nullptr;\n";
  started.push_back({op->getResult(0), request, where(op)});
  return request;
}

void FunctionEmitter::waitFor(Operation *op) {
  auto reads = [&](Value v) {
    if (!op)
      return true;
    bool found = false;
    op->walk([&](Operation *inner) {
      found = found || llvm::is_contained(inner->getOperands(), v);
    });
    return found;
  };
  for (auto it = started.begin(); it != started.end();) {
    if (!reads(it->value)) {
      ++it;
      continue;
    }
    os << "  {\n    // wait for " << it->where << "\n";
    if (it->row >= 0)
      os << "    const dg::ProfClocks pt = P.profStart();\n  ";
    os << "  if (P.check(distrt_wait(" << it->request << "), \"" << it->where
       << "\")) return 1;\n";
    if (it->row >= 0)
      os << "    P.profStop(" << it->row << ", pt);\n";
    os << "  }\n";
    it = started.erase(it);
  }
}

LogicalResult distopt::codegen::emitOp(FunctionEmitter &e, Operation *op) {
  e.os << "  // " << FunctionEmitter::where(op) << "\n";
  if (op->getNumResults() && !op->hasAttr(emit::kBuffersAttr))
    return op->emitError()
           << "dist-compile: " << op->getName()
           << " has no emit.buffers: the printer emits bodies that "
              "dist-prepare-for-emission prepared (run it first)";
  if (auto opaque = dyn_cast<distopt::graph::OpaqueOp>(op))
    return opaque.emitError()
           << "dist-compile: graph.opaque '" << opaque.getOpType()
           << "' has no lowering: " << opaqueAdvice(opaque.getOpType());
  if (auto kernel = dyn_cast<emit::KernelOp>(op)) {
    switch (kernel.getKind()) {
    case emit::KernelKind::loop:
      return emitLoopKernel(e, op);
    case emit::KernelKind::eltwise:
      return emitEltwiseKernel(e, op);
    case emit::KernelKind::post_ops:
      return emitPostOpKernel(e, op);
    }
  }
  // The plan's precision decision: an f32-only kernel on f32 copies.
  if (op->hasAttr(emit::kComputeTypeAttr))
    return e.emitWidened(op, [&] {
      return isTrainOp(op) ? emitTrainOp(e, op) : emitNNOp(e, op);
    });
  if (isElementwise(op))
    return emitElementwise(e, op);
  if (isDataOp(op) || isa<emit::CopyOp>(op))
    return emitDataOp(e, op);
  if (isNNOp(op))
    return emitNNOp(e, op);
  if (isTrainOp(op))
    return emitTrainOp(e, op);
  if (isCommOp(op))
    return emitCommOp(e, op);
  return op->emitError() << "dist-compile: op '" << op->getName()
                         << "' has no lowering to the runtime";
}

/// Emits the body of `func` (inputs uploaded, ops, outputs downloaded,
/// updates written back) and collects its input/output names and values.
static LogicalResult
emitBody(const ModelUnit &model, func::FuncOp func, llvm::StringRef prefix,
         const CodegenOptions &options, std::string &bodyText,
         std::string &globalText, SmallVector<std::string> &inNames,
         SmallVector<std::string> &outNames, SmallVector<Value> &results,
         std::vector<FunctionEmitter::ProfiledOp> &profiled) {
  if (func.getBody().getBlocks().size() != 1)
    return func.emitError() << "dist-compile: @" << func.getSymName()
                            << " must have a single block";
  Block &body = func.getBody().front();
  if (failed(requireMemoryPlan(func)))
    return failure();
  llvm::raw_string_ostream bodyOS(bodyText), globalOS(globalText);
  FunctionEmitter e(bodyOS, globalOS, options, prefix.str());
  e.profiled = &profiled;
  e.training = updatesWeights(func);
  computeFusion(body, e.fused);
  e.computeLifetimes(body);
  if (e.training)
    e.updatesInPlace = inPlaceUpdates(func, e.fused);

  // Input and output names (ONNX names when imported, else argN/outN).
  for (BlockArgument arg : body.getArguments()) {
    auto n =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.name");
    inNames.push_back(n ? n.str() : "arg" + std::to_string(arg.getArgNumber()));
    if (!isa<RankedTensorType>(arg.getType()) ||
        !FunctionEmitter::typeOf(arg).hasStaticShape() ||
        FunctionEmitter::cType(arg).empty() ||
        FunctionEmitter::dgType(FunctionEmitter::typeOf(arg).getElementType())
            .empty())
      return func.emitError()
             << "dist-compile: input '" << inNames.back() << "' has type "
             << arg.getType()
             << "; inputs must be statically shaped tensors of f32, f64, "
                "f16, i1 or integers, which .npy files carry (pin shapes "
                "with --input-shape=NAME:D0xD1...)";
    e.allocate(arg);
    bodyOS << "  if (P.upload(" << e.name(arg) << ", P.inputs["
           << arg.getArgNumber() << "].data.data(), P.inputs["
           << arg.getArgNumber() << "].data.size())) return 1;\n";
  }
  for (Operation &op : body) {
    e.waitFor(isa<func::ReturnOp>(op) ? nullptr : &op);
    if (auto ret = dyn_cast<func::ReturnOp>(&op)) {
      for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
        // Training: write updated weights and state back to their buffers.
        if (auto upd =
                func.getResultAttrOfType<StringAttr>(k, "graph.update")) {
          if (!e.updatesInPlace.contains(v))
            emitUpdateWriteBack(e, upd.getValue(), v);
          continue;
        }
        auto n = func.getResultAttrOfType<StringAttr>(k, "graph.name");
        if (!n)
          n = func.getResultAttrOfType<StringAttr>(k, "graph.output");
        unsigned slot = outNames.size();
        outNames.push_back(n ? n.str() : "out" + std::to_string(k));
        if (!isa<RankedTensorType>(v.getType()) ||
            !FunctionEmitter::typeOf(v).hasStaticShape() ||
            FunctionEmitter::cType(v).empty() ||
            FunctionEmitter::dgType(FunctionEmitter::typeOf(v).getElementType())
                .empty())
          return ret.emitError()
                 << "dist-compile: output '" << outNames.back()
                 << "' has unsupported type " << v.getType()
                 << "; outputs are written as .npy files of f32, f64, f16, "
                    "i1 or integers";
        results.push_back(v);
        bodyOS << "  if (P.download(P.outputs[" << slot << "].data.data(), "
               << e.name(v) << ", P.outputs[" << slot
               << "].data.size())) return 1;\n";
      }
      continue;
    }
    if (failed(e.emitProfiled(&op)))
      return failure();
  }

  return success();
}

LogicalResult distopt::codegen::emitModel(const ModelUnit &model,
                                          llvm::StringRef ns,
                                          const CodegenOptions &options,
                                          llvm::raw_ostream &out) {
  ModuleOp module = model.module;
  func::FuncOp func = findMain(module, model.funcName);
  if (!func || (!model.funcName.empty() && func.getSymName() != model.funcName))
    return module.emitError()
           << "dist-compile: no function to compile in '" << model.source
           << "'; expected func.func @"
           << (model.funcName.empty() ? "main (or a single function)"
                                      : model.funcName);
  if (isPipelined(func))
    return emitPipelineModel(model, func, ns, options, out);
  if (!func.getBody().empty() &&
      llvm::any_of(func.getBody().front(),
                   [](Operation &op) { return isa<dist::StageOp>(op); }))
    return func.emitError()
           << "dist-compile: @" << func.getSymName()
           << " has dist.stage regions but the module has no plan "
              "('dist.plan') saying which devices run them and in what "
              "order; plan it (dist-opt --dist-cluster=... --dist-plan=... "
              "or --dist-search) and compile the planner's output";
  std::string bodyText, globalText;
  SmallVector<std::string> inNames, outNames;
  SmallVector<Value> results;
  std::vector<FunctionEmitter::ProfiledOp> profiled;
  if (failed(emitBody(model, func, ns, options, bodyText, globalText, inNames,
                      outNames, results, profiled)))
    return failure();
  Block &body = func.getBody().front();
  // Gradient accumulation: @train_microbatch runs k times per step, then
  // @train_apply (no inputs) updates the weights.
  std::string applyText, applyGlobals;
  int64_t accumulation = 1;
  if (auto cfg = func->getAttrOfType<DictionaryAttr>("graph.train"))
    if (auto k = cfg.getAs<IntegerAttr>("accumulation_steps"))
      accumulation = k.getInt();
  if (func.getSymName() == "train_microbatch") {
    auto apply = module.lookupSymbol<func::FuncOp>("train_apply");
    if (!apply)
      return func.emitError() << "dist-compile: @train_microbatch without "
                                 "@train_apply; rerun dist-autodiff";
    SmallVector<std::string> ain, aout;
    SmallVector<Value> ares;
    if (failed(emitBody(model, apply, (ns + "a").str(), options, applyText,
                        applyGlobals, ain, aout, ares, profiled)))
      return failure();
    if (!ain.empty() || !aout.empty())
      return apply.emitError() << "dist-compile: @train_apply must take no "
                                  "inputs and return only graph.update results";
  }

  // Data parallelism: inputs marked `dist.batch_shard` (by
  // --dist-data-parallel) hold every rank's rows; each rank keeps its own.
  bool collectives = hasCollectives(func) ||
                     (!applyText.empty() &&
                      hasCollectives(module.lookupSymbol("train_apply")));
  std::string shards;
  for (BlockArgument arg : body.getArguments())
    shards += std::string(shards.empty() ? "" : ", ") +
              (func.getArgAttr(arg.getArgNumber(), "dist.batch_shard") ? "1"
                                                                        : "0");

  out << "namespace " << ns << " {\n" << globalText << applyGlobals;
  if (collectives && !inNames.empty())
    out << "static const int shards[] = {" << shards << "};\n";
  out << "static int run(dg::Program &P) {\n"
      << bodyText << "  P.releaseAll();\n  return 0;\n}\n";
  if (!applyText.empty())
    out << "static int apply(dg::Program &P) {\n"
        << applyText << "  P.releaseAll();\n  return 0;\n}\n";
  ModelTableFields fields;
  fields.trains = updatesWeights(func) || !applyText.empty();
  if (!applyText.empty()) {
    fields.apply = "apply";
    fields.accumulation = accumulation;
  }
  fields.collectives = collectives;
  if (collectives && !inNames.empty())
    fields.shards = "shards";
  // ZeRO: the shards' shapes fix the world, and each rank saves its own.
  if (auto zero = dist::DistDialect::ZeroAttrHelper(func.getContext())
                      .getAttr(func))
    if (auto n = zero.getAs<IntegerAttr>("replicas")) {
      fields.world = static_cast<unsigned>(n.getInt());
      fields.replicas = n.getInt();
    }
  emitOpTable(out, profiled);
  if (!profiled.empty()) {
    fields.ops = "ops";
    fields.numOps = profiled.size();
  }
  emitModelTable(out, model, body.getArguments(), inNames, results, outNames,
                 fields);
  out << "} // namespace " << ns << "\n\n";
  return success();
}

LogicalResult distopt::codegen::emitProgram(llvm::ArrayRef<ModelUnit> models,
                                            const CodegenOptions &options,
                                            llvm::raw_ostream &os,
                                            std::vector<std::string> *skipped) {
  bool cuda = options.target == Target::CUDA;
  os << "// Generated by dist-compile (" << (cuda ? "CUDA C++" : "C++")
     << "); do not edit. Models:";
  for (const ModelUnit &m : models)
    os << " " << m.name;
  // One include, first, so that a CPU program's compile can read it
  // precompiled (Toolchain.cpp, precompileRuntimeHeader); it includes
  // distrt.h.
  os << "\n#include <distrt/distrt_gen.h>\n\n";
  std::string text;
  llvm::raw_string_ostream body(text);
  std::vector<std::string> emitted;
  for (auto [k, m] : llvm::enumerate(models)) {
    std::string one;
    llvm::raw_string_ostream oneOS(one);
    std::string ns = "m" + std::to_string(k);
    if (failed(emitModel(m, ns, options, oneOS))) {
      if (!skipped)
        return failure();
      skipped->push_back(m.name);
      continue;
    }
    body << one;
    emitted.push_back(ns);
  }
  if (emitted.empty())
    return failure();
  os << text << "static const dg::Model models[] = {";
  for (size_t k = 0; k < emitted.size(); ++k)
    os << (k ? ", " : "") << emitted[k] << "::model";
  os << "};\n\nint main(int argc, char **argv) {\n  return dg::runMain(argc, "
        "argv, models, "
     << emitted.size() << ", " << (cuda ? "true" : "false") << ");\n}\n";
  return success();
}
