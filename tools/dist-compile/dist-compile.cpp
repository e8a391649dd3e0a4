//===- dist-compile.cpp - ONNX / graph IR to an executable ------*- C++ -*-===//
//
// Part of DistOpt. One step from a model to a program:
//
//   dist-compile model.onnx --target=cpu -o model.bin
//   ./model.bin input_ids=ids.npy -o outdir      # writes outdir/logits.npy
//
// Imports each model (ONNX, or graph-dialect .mlir), emits C++ (or CUDA
// C++) that calls the kernel runtime, and compiles it with the host
// compiler (or nvcc) against the runtime. Several models may go into one
// program (`--model NAME` picks one at run time). docs/codegen.md.
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "dist/Diagnostics.h"
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "dist/Pipelines.h"
#include "lib/Codegen/Codegen.h"
#include "lib/Support/MLIRInputCheck.h"
#include "lib/Support/OutputFile.h"
#include "passes/Distribute/DataParallel.h"
#include "passes/Passes.h"
#include "passes/Planning/LayerAnalysis.h"
#include "passes/Planning/Planning.h"
#include "tools/Init/ParseGuard.h"
#include "tools/Init/ToolFlags.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <set>

using namespace mlir;
using namespace llvm;
using namespace distopt;

static cl::OptionCategory category("dist-compile options");

/// What a searched plan may use so that the programs run it, training or
/// inference: expert parallelism with dp, tp and pp, ZeRO with tp = 1 and
/// no sequence parallelism with tp > 1 (no cp); context parallelism runs
/// with dp, tp, sp, pp and ZeRO.
static constexpr const char *kRunnableConstraints = "ep-runs=1";

static cl::list<std::string>
    inputs(cl::Positional, cl::ZeroOrMore,
           cl::desc("<model.onnx|model.mlir|NAME=model.onnx>..."),
           cl::cat(category));
static cl::opt<std::string>
    output("o",
           cl::desc("Executable to write; a folder (DIR/, or an existing "
                    "one) gets a job: DIR/program and DIR/manifest.json, which "
                    "dist-run launches"),
           cl::value_desc("model.bin|DIR/"), cl::init("model.bin"),
           cl::cat(category));
static cl::opt<std::string> target("target", cl::desc("cpu (default) or cuda"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    emitSource("emit-source",
               cl::desc("Also write the generated source to this file"),
               cl::value_desc("model.cpp"), cl::cat(category));
static cl::opt<bool>
    sourceOnly("source-only",
               cl::desc("Write the generated source (to -o) and stop"),
               cl::cat(category));
static cl::opt<bool> compileOnly(
    "compile-only",
    cl::desc("Compile to an object file (-o) without linking (CI check of "
             "the CUDA path)"),
    cl::cat(category));
static cl::opt<bool> skipUnsupported(
    "skip-unsupported",
    cl::desc("Leave out models that cannot be imported or lowered (each is "
             "reported as 'skipped NAME: reason') instead of failing"),
    cl::cat(category));
static cl::opt<std::string> train(
    "train",
    cl::desc("Compile a training step: run dist-autodiff with these options "
             "(e.g. \"loss=mse:target optimizer=adam lr=0.01\") and build "
             "@train_step; the program then takes --steps N"),
    cl::value_desc("autodiff options"), cl::cat(category));
static cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("With --train: run dist-data-parallel after dist-autodiff. The "
             "program averages gradients and the loss over the ranks mpirun "
             "starts; --input-shape gives the per-rank batch and each input "
             "file holds every rank's rows (docs/distributed.md)"),
    cl::cat(category));
static cl::opt<std::string>
    entry("entry",
          cl::desc("Function to compile (default: main, or train_step with "
                   "--train)"),
          cl::cat(category));
static cl::opt<std::string> prepareOptions(
    "prepare-options",
    cl::desc("Options for dist-prepare-for-emission, e.g. \"post-ops=false "
             "views=false\" (the target is set from --target)"),
    cl::value_desc("pass options"), cl::cat(category));
static cl::opt<std::string> contextParallelOptions(
    "context-parallel-options",
    cl::desc("Options for dist-context-parallel under a plan with cp > 1, "
             "e.g. \"balance=0\" (the contiguous sequence split) or "
             "\"ring=0\" (the all-gather attention)"),
    cl::value_desc("pass options"), cl::cat(category));
static cl::opt<bool> verbose("v", cl::desc("Print the compiler command"),
                             cl::cat(category));
static cl::opt<bool> precompileHeader(
    "precompile-runtime-header",
    cl::desc("Precompile the runtime's program header for the CPU programs' "
             "compiles into the recipe's pch= folder, and stop (the build "
             "runs it)"),
    cl::Hidden, cl::cat(category));

namespace {
struct Input {
  std::string name, path;
};
} // namespace

static bool isIdentifier(StringRef s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!isAlnum(c) && c != '_' && c != '-' && c != '.')
      return false;
  return true;
}

/// Checks the option names of `--train` against dist-autodiff's own (read
/// from the pass's registered help, so the list cannot drift), suggesting
/// the closest spelling of an unknown one. Returns the error, or "".
static std::string checkTrainOptions(StringRef options) {
  OpPassManager pm("builtin.module");
  std::string all;
  raw_string_ostream os(all);
  if (failed(parsePassPipeline("dist-autodiff", pm, os)))
    return "";
  pm.printAsTextualPipeline(os);
  StringRef body = StringRef(all).split('{').second.rsplit('}').first;
  SmallVector<StringRef> known;
  for (StringRef item : llvm::split(body, ' '))
    if (!item.empty())
      known.push_back(item.split('=').first);
  SmallVector<StringRef> given;
  options.split(given, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef item : given) {
    StringRef key = item.split('=').first;
    if (llvm::is_contained(known, key))
      continue;
    auto [best, bestDistance] = closestSpelling(known, key);
    std::string msg = "--train: dist-autodiff has no option '" + key.str() + "'";
    if (bestDistance <= std::max<size_t>(2, key.size() / 3))
      msg += "; did you mean '" + best.str() + "'?";
    msg += " (options: " + llvm::join(known, ", ") + ")";
    return msg;
  }
  return "";
}

/// The element type the programs compute in, as the planner spells it:
/// fp32, or --train's `mixed-precision=bf16|fp16`.
/// The value of `key=value` in --train's options, or \p otherwise.
static StringRef trainOption(StringRef trainOptions, StringRef key,
                             StringRef otherwise) {
  SmallVector<StringRef> items;
  trainOptions.split(items, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef item : items)
    if (auto [k, value] = item.split('='); k == key)
      return value;
  return otherwise;
}

static std::string programDType(StringRef trainOptions) {
  StringRef mixed = trainOption(trainOptions, "mixed-precision", "");
  return mixed == "bf16" || mixed == "fp16" ? mixed.str() : "fp32";
}

/// Prints what the training function of `module` trains and freezes
/// (dist-autodiff's `graph.trained`).
static void printTrainedSummary(ModuleOp module, StringRef model) {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto trained = func->getAttrOfType<DictionaryAttr>("graph.trained");
    if (!trained)
      continue;
    auto count = [&](StringRef key) {
      auto a = trained.getAs<IntegerAttr>(key);
      return a ? a.getInt() : 0;
    };
    auto frozen = trained.getAs<DictionaryAttr>("frozen");
    errs() << "dist-compile: " << model << ": training " << count("tensors")
           << " tensor(s), " << count("parameters") << " parameter(s)";
    if (frozen && !frozen.empty()) {
      errs() << "; frozen " << frozen.size() << " tensor(s), "
             << count("frozen_parameters") << " parameter(s):";
      unsigned shown = 0;
      for (NamedAttribute f : frozen) {
        if (shown++ == 8) {
          errs() << " ... and " << frozen.size() - 8 << " more";
          break;
        }
        errs() << (shown > 1 ? "," : "") << " " << f.getName().getValue()
               << " (" << cast<StringAttr>(f.getValue()).getValue() << ")";
      }
    }
    errs() << "\n";
    return;
  }
}

/// Imports one model: ONNX by extension or magic, otherwise .mlir text.
static OwningOpRef<ModuleOp> load(const Input &in, MLIRContext &ctx,
                                  SourceMgr &sm,
                                  const ONNXImportOptions &options) {
  auto buf = MemoryBuffer::getFile(in.path);
  if (!buf) {
    WithColor::error() << "cannot read '" << in.path
                       << "': " << buf.getError().message() << "\n";
    return nullptr;
  }
  if (looksLikeONNX(in.path, (*buf)->getBuffer()))
    return importONNXFile(in.path, &ctx, options);
  std::string bad =
      distopt::checkMLIRResultNumbers((*buf)->getBuffer(), in.path);
  if (!bad.empty()) {
    WithColor::error() << bad << "\n";
    return nullptr;
  }
  // MLIR's parser and forward uses of block arguments (ParseGuard.h).
  if (failed(checkParseInChild((*buf)->getBuffer(), in.path,
                               ctx.getDialectRegistry(),
                               ctx.allowsUnregisteredDialects(),
                               /*quiet=*/false)))
    return nullptr;
  // One source manager per file: parseSourceFile reads its main buffer.
  (void)sm;
  return parseSourceFile<ModuleOp>(in.path, &ctx);
}

/// True for a planned module whose plan splits the function `degree` > 1
/// ways and whose function is not yet split (no op carries `marker`, the
/// attribute the splitting pass leaves).
static bool needsSplit(ModuleOp module,
                       llvm::function_ref<unsigned(dist::PlanAttr)> degree,
                       StringRef marker) {
  auto plan = dist::DistDialect::PlanAttrHelper(module.getContext())
                  .getAttr(module);
  if (!plan || degree(plan) < 2)
    return false;
  return !module
              .walk([&](Operation *op) {
                return op->hasAttr(marker) ? WalkResult::interrupt()
                                           : WalkResult::advance();
              })
              .wasInterrupted();
}

/// Tensor parallelism: not yet split while no weight has `dist.tp_shard`.
static bool needsTensorParallel(ModuleOp module) {
  return needsSplit(
      module, [](dist::PlanAttr p) { return p.getLayout().tp; },
      dist::DistDialect::TpShardAttrHelper::getNameStr());
}

/// Context parallelism: not yet split while no input slice has
/// `dist.context_split`.
static bool needsContextParallel(ModuleOp module) {
  return needsSplit(
      module, [](dist::PlanAttr p) { return p.getLayout().cp; },
      dist::DistDialect::ContextSplitAttrHelper::getNameStr());
}

/// Expert parallelism: not yet split while no op exchanges tokens over
/// the expert groups (dist-expert-parallel's `dist.all_to_all`; the
/// weights' `dist.tp_shard` does not tell, as dist-tensor-parallel, which
/// runs first, writes it too). With ep = 1 and tp > 1 the pass splits
/// the routed experts over the tensor ranks: needed while a GEMM reads a
/// stacked weight [experts, in, out] that no shard marks.
static bool needsExpertParallel(ModuleOp module) {
  auto plan =
      dist::DistDialect::PlanAttrHelper(module.getContext()).getAttr(module);
  if (!plan)
    return false;
  if (plan.getEp() < 2) {
    if (plan.getLayout().tp < 2)
      return false;
    return module
        .walk([](graph::MatmulOp m) {
          auto w = m.getRhs().getDefiningOp<graph::WeightOp>();
          if (w && w.getType().getRank() == 3 &&
              !w->hasAttr(dist::DistDialect::TpShardAttrHelper::getNameStr()))
            return WalkResult::interrupt();
          return WalkResult::advance();
        })
        .wasInterrupted();
  }
  return !module.walk([](dist::AllToAllOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
}

/// True for a planned module whose function is a pipeline (more than one
/// virtual stage), tensor parallel or a data-parallel forward stream, not
/// yet partitioned into per-list programs.
static bool needsPartition(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  auto plan = dist::DistDialect::PlanAttrHelper(ctx).getAttr(module);
  // Tensor parallelism without a pipeline runs as a one-stage pipeline:
  // every tp rank runs list 0, micro-batches accumulate. Context and expert
  // parallelism go there too, so that dist-partition says what it runs. So
  // does a plan of several micro-batches per replica (they accumulate, or
  // stream), and inference with data parallelism alone (each replica
  // streams its rows). Training on one micro-batch per replica is
  // dist-data-parallel's (the dataParallel train option in main).
  bool training = llvm::any_of(module.getOps<func::FuncOp>(), [](auto f) {
    return f->hasAttr("graph.train");
  });
  if (!plan || (plan.getNumVirtualStages() < 2 && plan.getLayout().tp < 2 &&
                plan.getCp() < 2 && plan.getEp() < 2 &&
                plan.getMicrobatches() == 1 &&
                (training || plan.getLayout().dp < 2)))
    return false;
  auto lists = dist::DistDialect::ActionListAttrHelper(ctx);
  return llvm::none_of(module.getOps<func::FuncOp>(), [&](func::FuncOp f) {
    return lists.isAttrPresent(f);
  });
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  ImportFlags importFlags;
  TrainFlags trainFlags;
  PlanFlags planFlags;
  // Code generation reports what does not lower itself.
  planFlags.checkCompilable = false;
  cl::HideUnrelatedOptions({&category, &importFlags.category,
                            &trainFlags.category, &planFlags.category});
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-compile: build an executable from ONNX models or graph IR\n");
  if (precompileHeader) {
    auto tc = codegen::findToolchain(argv[0]);
    Error err =
        tc ? codegen::precompileRuntimeHeader(*tc, verbose) : tc.takeError();
    if (err) {
      WithColor::error() << toString(std::move(err)) << "\n";
      return 1;
    }
    return 0;
  }
  if (inputs.empty()) {
    WithColor::error() << "no input: give one or more models "
                          "(model.onnx, model.mlir or NAME=model.onnx)\n";
    return 2;
  }

  codegen::CodegenOptions options;
  if (target == "cuda") {
    options.target = codegen::Target::CUDA;
  } else if (target != "cpu") {
    WithColor::error() << "unknown --target='" << target
                       << "'; use cpu or cuda\n";
    return 2;
  }
  ONNXImportOptions importOptions;
  std::string flagError;
  if (!importFlags.get(importOptions, flagError)) {
    WithColor::error() << flagError << "\n";
    return 2;
  }

  // The plan is costed in the precision the programs compute in (time,
  // and memory: fp32 weights and gradients, or mixed precision's 2-byte
  // ones beside fp32 master weights), unless --dist-dtype says otherwise.
  if (auto *dtype = planFlags.options.find(&PlanOptions::dtype);
      dtype && !dtype->getNumOccurrences())
    dtype->setValue(programDType(train));
  // A training job's memory holds the state of the optimizer its programs
  // run (dist-autodiff's default is sgd; it reports a name it does not
  // know), unless --dist-optimizer says otherwise.
  StringRef trained = trainOption(train, "optimizer", "sgd");
  if (auto *optimizer = planFlags.options.find(&PlanOptions::optimizer);
      optimizer && !optimizer->getNumOccurrences() && !train.empty() &&
      cost::parseOptimizer(trained))
    optimizer->setValue(trained.str());

  // A program without --train runs forward only: its plan is an inference
  // plan (no gradients or optimizer state in memory, no backward in the
  // schedule), unless --dist-mode says otherwise.
  if (auto *mode = planFlags.options.find(&PlanOptions::mode);
      mode && !mode->getNumOccurrences() && train.empty())
    mode->setValue("infer");

  if (dataParallel && train.empty()) {
    WithColor::error() << "--data-parallel needs --train: it averages the "
                          "gradients of a training step over the ranks\n";
    return 2;
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  SourceMgr sm;
  // Print every diagnostic with its location; remember the last error so a
  // skipped model can be reported with its reason on one line.
  std::string lastError;
  ctx.getDiagEngine().registerHandler([&](Diagnostic &d) {
    std::string loc;
    raw_string_ostream los(loc);
    // ONNX ops: the node's name; else file:line:col.
    if (isNodeLocation(d.getLocation()))
      los << describeLocation(d.getLocation());
    else if (auto fl = d.getLocation()->findInstanceOf<FileLineColLoc>())
      los << fl.getFilename().getValue() << ":" << fl.getLine() << ":"
          << fl.getColumn();
    else
      d.getLocation().print(los);
    const char *sev = d.getSeverity() == DiagnosticSeverity::Error ? "error"
                      : d.getSeverity() == DiagnosticSeverity::Warning
                          ? "warning"
                      : d.getSeverity() == DiagnosticSeverity::Remark ? "remark"
                                                                      : "note";
    if (d.getSeverity() == DiagnosticSeverity::Error)
      lastError = d.str();
    if (d.getSeverity() != DiagnosticSeverity::Remark || verbose)
      errs() << loc << ": " << sev << ": " << d.str() << "\n";
    return success();
  });

  std::vector<Input> models;
  std::set<std::string> used;
  for (const std::string &arg : inputs) {
    Input in{"", arg};
    size_t eq = arg.find('=');
    if (eq != std::string::npos && isIdentifier(arg.substr(0, eq)) &&
        !sys::fs::exists(arg)) {
      in.name = arg.substr(0, eq);
      in.path = arg.substr(eq + 1);
    } else {
      in.name = sys::path::stem(arg).str();
    }
    std::string base = in.name;
    for (int k = 2; used.count(in.name); ++k)
      in.name = base + "_" + std::to_string(k);
    used.insert(in.name);
    models.push_back(in);
  }

  std::vector<OwningOpRef<ModuleOp>> modules;
  std::vector<codegen::ModelUnit> units;
  std::vector<std::string> skipped;
  for (const Input &in : models) {
    OwningOpRef<ModuleOp> m = load(in, ctx, sm, importOptions);
    if (!m) {
      if (!skipUnsupported) {
        WithColor::error() << "cannot import '" << in.path << "'\n";
        return 1;
      }
      errs() << "skipped " << in.name << ": import failed: " << lastError
             << "\n";
      continue;
    }
    // Planning flags plan the forward function first (as dist-opt does),
    // so a training step is differentiated on the planned function. A
    // search picks only plans the programs run (docs/distributed.md, "What
    // does not run yet") with the compiled micro-batch: the function's
    // rows (--input-shape gives one micro-batch); --dist-search=KEY=...
    // overrides a key.
    if (planFlags.searching()) {
      planFlags.baseConstraints = kRunnableConstraints;
      func::FuncOp fn = planning::findPlannedFunction(*m);
      if (std::optional<int64_t> rows =
              fn ? planning::microbatchRows(fn) : std::nullopt)
        planFlags.baseConstraints += ",mbs=" + std::to_string(*rows);
      outs() << "search: only plans the programs run with this micro-batch ("
             << planFlags.baseConstraints
             << "; --dist-search=KEY=... overrides a key)\n";
    }
    if (planFlags.any()) {
      PassManager pm(&ctx);
      std::string error;
      if (!planFlags.addPasses(pm, /*simulatorNamed=*/false, error)) {
        WithColor::error() << error << "\n";
        return 2;
      }
      if (failed(pm.run(*m))) {
        WithColor::error() << "cannot plan '" << in.path << "'\n";
        return 1;
      }
    }
    // Whichever pass builds the programs, the planned function is one
    // micro-batch of the plan (a plan of one rank and one micro-batch
    // builds no per-rank programs, so dist-partition's check is not on
    // its path).
    if (auto plan = dist::DistDialect::PlanAttrHelper(&ctx).getAttr(*m))
      if (func::FuncOp fn = planning::findPlannedFunction(*m);
          fn &&
          failed(planning::checkMicrobatchRows(fn, plan, "dist-compile"))) {
        WithColor::error() << "cannot compile '" << in.path
                           << "' for its plan\n";
        return 1;
      }
    // Tensor parallelism rewrites the planned function into one rank's
    // part before it is differentiated (dist-tensor-parallel).
    // One lowering pass on the model: 0 when it ran, 1 when it failed
    // (reported), -1 when the model is skipped (--skip-unsupported).
    auto lower = [&](std::unique_ptr<Pass> pass, const Twine &what) {
      PassManager pm(&ctx);
      pm.addPass(std::move(pass));
      if (succeeded(pm.run(*m)))
        return 0;
      if (!skipUnsupported) {
        WithColor::error() << "cannot " << what << "\n";
        return 1;
      }
      errs() << "skipped " << in.name << ": " << lastError << "\n";
      return -1;
    };
    // Context parallelism splits the sequence first
    // (dist-context-parallel), then tensor parallelism the weights
    // (dist-tensor-parallel) and expert parallelism the experts
    // (dist-expert-parallel: each rank keeps its experts, the tokens are
    // exchanged). The last two keep the cost model's names of the whole
    // ops (before the split), so that a program's --profile-json files its
    // shards' times where the planner looks for them: under the whole op
    // and the plan's degrees.
    struct Split {
      bool (*needed)(ModuleOp);
      std::unique_ptr<Pass> (*make)();
      bool named;
      const char *ranks;
    };
    const Split splits[] = {
        {needsContextParallel,
         [] {
           std::unique_ptr<Pass> pass = createContextParallelPass();
           // Checked before the split (below), so this succeeds.
           std::string unused;
           (void)initializePassOptions(*pass, contextParallelOptions, unused);
           return pass;
         },
         false, "context-parallel"},
        {needsTensorParallel, [] { return createTensorParallelPass(); }, true,
         "tensor-parallel"},
        {needsExpertParallel, [] { return createExpertParallelPass(); }, true,
         "expert-parallel"},
    };
    if (std::string bad; !initializePassOptions(*createContextParallelPass(),
                                                contextParallelOptions, bad)) {
      WithColor::error() << "--context-parallel-options=\""
                         << contextParallelOptions
                         << "\": " << StringRef(bad).trim()
                         << " (the options are dist-context-parallel's: "
                            "verbose, ring, balance)\n";
      return 2;
    }
    int splitRc = 0;
    for (const Split &split : splits) {
      if (!split.needed(*m))
        continue;
      if (split.named)
        planning::annotateCostSignatures(*m);
      splitRc = lower(split.make(), "split '" + in.path + "' over the plan's " +
                                        split.ranks + " ranks");
      if (splitRc)
        break;
    }
    if (splitRc > 0)
      return splitRc;
    if (splitRc < 0)
      continue;
    if (!train.empty()) {
      if (std::string bad = checkTrainOptions(train); !bad.empty()) {
        WithColor::error() << bad << "\n";
        return 2;
      }
      PassManager pm(&ctx);
      TrainOptions trainOptions;
      trainOptions.autodiff = train;
      trainOptions.loss = trainFlags.loss;
      // A plan of data parallelism alone, one micro-batch per replica,
      // runs as dist-data-parallel (its dp, ZeRO stage and batch);
      // pipelines and accumulated micro-batches through dist-partition
      // below.
      dist::PlanAttr dpPlan = dataParallelPlan(*m);
      trainOptions.dataParallel =
          dataParallel || (dpPlan && dpPlan.getDp() > 1 &&
                           dpPlan.getMicrobatches() == 1);
      std::string error;
      if (failed(buildTrainPipeline(pm, trainOptions, error))) {
        WithColor::error() << "bad --train options '" << train << "'\n";
        return 2;
      }
      if (verbose) {
        errs() << "running ";
        pm.printAsTextualPipeline(errs());
        errs() << "\n";
      }
      if (failed(pm.run(*m))) {
        if (!skipUnsupported) {
          WithColor::error() << "dist-autodiff failed on '" << in.path << "'\n";
          return 1;
        }
        errs() << "skipped " << in.name << ": autodiff failed: " << lastError
               << "\n";
        continue;
      }
      printTrainedSummary(*m, in.name);
    }
    // A planned pipeline runs from its schedule: one program per action
    // list (dist-partition; it outlines and materializes what is missing),
    // the forward stream of @main or, with --train, the training step.
    // Gradient ops are named after their forward op while both are in one
    // function (before the stages are outlined).
    if (needsPartition(*m)) {
      planning::annotateCostSignatures(*m);
      if (int rc = lower(createPartitionPass(),
                         "partition '" + in.path + "' into per-rank programs")) {
        if (rc > 0)
          return rc;
        continue;
      }
    }
    // The printer prints what the IR says: dist-prepare-for-emission makes
    // the kernel, memory, layout and precision decisions first (after the
    // cost model names each op for --profile-json).
    planning::annotateCostSignatures(*m);
    {
      PassManager pm(&ctx);
      std::string pipeline = std::string("dist-prepare-for-emission{target=") +
                             (options.target == codegen::Target::CUDA ? "cuda"
                                                                     : "cpu") +
                             " " + prepareOptions + "}";
      if (failed(parsePassPipeline(pipeline, pm, errs())) ||
          failed(pm.run(*m))) {
        if (!skipUnsupported) {
          WithColor::error() << "dist-prepare-for-emission failed on '"
                             << in.path << "'\n";
          return 1;
        }
        errs() << "skipped " << in.name
               << ": preparing for emission failed: " << lastError << "\n";
        continue;
      }
      if (verbose)
        errs() << "running " << pipeline << "\n";
    }
    SmallString<256> abs(in.path);
    sys::fs::make_absolute(abs);
    std::string fn = entry.getValue();
    if (fn.empty() && !train.empty())
      fn = m->lookupSymbol("train_step") ? "train_step" : "train_microbatch";
    units.push_back(
        {in.name, in.path, sys::path::parent_path(abs).str(), m.get(), fn});
    modules.push_back(std::move(m));
  }
  if (units.empty()) {
    WithColor::error() << "no model could be imported\n";
    return 1;
  }

  // Lower the models one by one first so each skip gets its own reason.
  std::vector<std::pair<std::string, std::string>> skipReasons;
  if (skipUnsupported) {
    std::vector<codegen::ModelUnit> kept;
    for (const codegen::ModelUnit &u : units) {
      std::string scratch;
      raw_string_ostream sos(scratch);
      lastError.clear();
      if (succeeded(codegen::emitModel(u, "probe", options, sos)))
        kept.push_back(u);
      else
        skipReasons.push_back({u.name, lastError});
    }
    units = kept;
    if (units.empty()) {
      for (const auto &[name, reason] : skipReasons)
        errs() << "skipped " << name << ": " << reason << "\n";
      WithColor::error() << "no model could be lowered\n";
      return 1;
    }
  }
  std::string source;
  raw_string_ostream os(source);
  if (failed(codegen::emitProgram(units, options, os,
                                  skipUnsupported ? &skipped : nullptr))) {
    WithColor::error() << "code generation failed"
                       << (skipUnsupported ? ": no model could be lowered" : "")
                       << "\n";
    return 1;
  }
  for (const auto &[name, reason] : skipReasons)
    errs() << "skipped " << name << ": " << reason << "\n";

  auto writeFile = [&](StringRef path) -> bool {
    std::error_code ec;
    raw_fd_ostream f(path, ec);
    if (ec) {
      WithColor::error() << "cannot write '" << path << "': " << ec.message()
                         << "\n";
      return false;
    }
    f << source;
    std::string problem = distopt::closeOutput(f, path);
    if (!problem.empty()) {
      WithColor::error() << problem << "\n";
      return false;
    }
    return true;
  };
  // A job folder: the program and its manifest (what each rank runs).
  std::string jobDir;
  if (StringRef(output).ends_with("/") || sys::fs::is_directory(output)) {
    if (sourceOnly) {
      WithColor::error() << "-o " << output
                         << " is a job folder but --source-only writes one "
                            "source file; give a file name\n";
      return 2;
    }
    jobDir = StringRef(output).rtrim('/').str();
    if (jobDir.empty())
      jobDir = "/";
    if (std::error_code ec = sys::fs::create_directories(jobDir)) {
      WithColor::error() << "cannot create the job folder '" << jobDir
                         << "': " << ec.message() << "\n";
      return 1;
    }
    SmallString<256> exe(jobDir);
    sys::path::append(exe, "program");
    output = std::string(exe);
  }
  if (sourceOnly)
    return writeFile(output) ? 0 : 1;
  if (!emitSource.empty() && !writeFile(emitSource))
    return 1;

  auto tc = codegen::findToolchain(argv[0]);
  if (!tc) {
    WithColor::error() << toString(tc.takeError()) << "\n";
    return 1;
  }
  SmallString<128> tmp;
  std::string srcPath = emitSource;
  if (srcPath.empty()) {
    if (auto ec = sys::fs::createTemporaryFile(
            "dist-compile",
            options.target == codegen::Target::CUDA ? "cu" : "cpp", tmp)) {
      WithColor::error() << "cannot create a temporary file: " << ec.message()
                         << "\n";
      return 1;
    }
    srcPath = std::string(tmp);
    if (!writeFile(srcPath))
      return 1;
  }
  Error err = codegen::buildExecutable(*tc, options, srcPath, output,
                                       compileOnly, verbose);
  if (emitSource.empty())
    sys::fs::remove(srcPath);
  if (err) {
    WithColor::error() << toString(std::move(err)) << "\n";
    return 1;
  }
  if (!jobDir.empty()) {
    SmallString<256> path(jobDir);
    sys::path::append(path, "manifest.json");
    std::error_code ec;
    raw_fd_ostream f(path, ec);
    if (ec) {
      WithColor::error() << "cannot write '" << path << "': " << ec.message()
                         << "\n";
      return 1;
    }
    // How to build the job again (dist-run --elastic): these arguments
    // without the output, run where this ran.
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
      StringRef a = argv[i];
      if (a == "-o" || a == "--o") {
        ++i;
        continue;
      }
      if (!a.starts_with("-o=") && !a.starts_with("--o="))
        args.push_back(a.str());
    }
    SmallString<256> cwd;
    sys::fs::current_path(cwd);
    codegen::writeJobManifest(units, "program", args, cwd, f);
    std::string problem = distopt::closeOutput(f, path);
    if (!problem.empty()) {
      WithColor::error() << problem << "\n";
      return 1;
    }
  }
  return 0;
}
