//===- client.cpp - A client of the installed DistOpt package --*- C++ -*-===//
//
// A small compiler that uses DistOpt only through its installed CMake
// package and the public headers under include/dist/.
//
//   dist-client MODEL.onnx   imports the model, verifies it and prints how
//                            many operations of each dialect it has;
//   dist-client --plan W0,W1,..
//                            builds an MLP of those widths itself (the graph
//                            dialect's C++ builders), plans it with
//                            planModule (two pipeline stages on a CPU
//                            preset) and prints what the plan wrote;
//   dist-client --plan-with-passes W0,W1,..
//                            the same through a pipeline of its own made
//                            from the pass factories.
//
//===----------------------------------------------------------------------===//
#include "dist/Dialects.h"
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "dist/Passes.h"
#include "dist/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

/// Builds, with the graph dialect's C++ builders, an MLP over a batch of 8
/// with layer widths \p widths (input first): matmul and relu per layer, no
/// relu after the last.
static mlir::OwningOpRef<mlir::ModuleOp>
buildMlp(mlir::MLIRContext &context, const std::vector<int64_t> &widths) {
  namespace graph = distopt::graph;
  mlir::OpBuilder b(&context);
  mlir::Location loc = b.getUnknownLoc();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  auto tensor = [&](int64_t rows, int64_t cols) {
    return mlir::RankedTensorType::get({rows, cols}, b.getF32Type());
  };
  b.setInsertionPointToEnd(module->getBody());
  auto main =
      mlir::func::FuncOp::create(b, loc, "main",
                                 b.getFunctionType({tensor(8, widths.front())},
                                                   {tensor(8, widths.back())}));
  b.setInsertionPointToEnd(main.addEntryBlock());
  mlir::Value value = main.getArgument(0);
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    auto w = graph::WeightOp::create(b, loc, tensor(widths[i], widths[i + 1]),
                                     b.getStringAttr("w" + std::to_string(i)),
                                     mlir::StringAttr(), mlir::IntegerAttr(),
                                     mlir::IntegerAttr(), mlir::StringAttr());
    value = graph::MatmulOp::create(
        b, loc, tensor(8, widths[i + 1]), value, w, /*bias=*/mlir::Value(),
        /*transpose_lhs=*/false, /*transpose_rhs=*/false,
        /*alpha=*/llvm::APFloat(1.0), /*beta=*/llvm::APFloat(1.0));
    if (i + 2 < widths.size())
      value = graph::UnaryOp::create(b, loc, value.getType(),
                                     graph::UnaryKind::Relu, value,
                                     mlir::FloatAttr(), mlir::FloatAttr());
  }
  mlir::func::ReturnOp::create(b, loc, value);
  return module;
}

/// Builds an MLP of \p widthList ("16,64,64,4") and plans it: with
/// planModule, or (\p ownPipeline) with a pipeline of its own made from the
/// pass factories. Prints the plan, the stage functions and the schedule.
static int planOwnModule(mlir::MLIRContext &context, llvm::StringRef widthList,
                         bool ownPipeline) {
  std::vector<int64_t> widths;
  for (llvm::StringRef w : llvm::split(widthList, ',')) {
    int64_t width = 0;
    if (w.getAsInteger(10, width) || width <= 0) {
      llvm::errs() << "dist-client: '" << w
                   << "' is not a layer width (a positive integer)\n";
      return 2;
    }
    widths.push_back(width);
  }
  if (widths.size() < 3) {
    llvm::errs() << "dist-client: --plan needs at least three widths (two "
                    "layers for two stages)\n";
    return 2;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = buildMlp(context, widths);
  if (mlir::failed(mlir::verify(*module)))
    return 1;

  if (ownPipeline) {
    mlir::PassManager pm(&context);
    distopt::AttachClusterPassOptions cluster;
    cluster.cluster = "cpu-xeon-2s";
    pm.addPass(distopt::createAttachClusterPass(cluster));
    pm.addPass(distopt::createAnnotateLayersPass());
    distopt::SetPlanPassOptions plan;
    plan.plan = "pp=2,mbs=2";
    plan.batch = 8;
    pm.addPass(distopt::createSetPlanPass(plan));
    pm.addPass(distopt::createOutlineStagesPass());
    pm.addPass(distopt::createOutlineStageFunctionsPass());
    pm.addPass(distopt::createMaterializeSchedulePass());
    pm.addPass(distopt::createVerifySchedulePass());
    if (mlir::failed(pm.run(*module)))
      return 1;
  } else {
    distopt::PlanOptions options;
    options.cluster = "cpu-xeon-2s";
    options.plan = "pp=2,mbs=2";
    options.batch = 8;
    if (mlir::failed(distopt::planModule(*module, options)))
      return 1;
  }
  if (mlir::failed(mlir::verify(*module)))
    return 1;

  auto plan = (*module)->getAttrOfType<distopt::dist::PlanAttr>("dist.plan");
  if (!plan) {
    llvm::errs() << "dist-client: the planned module has no #dist.plan\n";
    return 1;
  }
  llvm::outs() << "plan: " << plan << "\n";
  llvm::outs() << "pp " << plan.getPp() << ", micro-batches "
               << plan.getMicrobatches() << "\n";
  unsigned stageFunctions = 0;
  module->walk([&](mlir::func::FuncOp f) {
    stageFunctions += f.getSymName().contains("_stage");
  });
  llvm::outs() << "stage functions: " << stageFunctions << "\n";
  llvm::StringMap<unsigned> perOp;
  module->walk([&](mlir::Operation *op) {
    if (op->getName().getDialectNamespace() == "dist")
      ++perOp[op->getName().getStringRef()];
  });
  for (const char *name : {"dist.schedule", "dist.forward", "dist.backward"})
    llvm::outs() << name << ": " << perOp.lookup(name) << "\n";
  return 0;
}

/// Imports \p path and prints the operations per dialect.
static int importModel(mlir::MLIRContext &context, llvm::StringRef path) {
  distopt::ONNXImportOptions options;
  options.weights = distopt::WeightPolicy::Ignore;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      distopt::importONNXFile(path, &context, options);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 1;

  llvm::StringMap<unsigned> perDialect;
  module->walk([&](mlir::Operation *op) {
    ++perDialect[op->getName().getDialectNamespace()];
  });
  for (const char *name : {"builtin", "func", "graph"})
    llvm::outs() << name << ": " << perDialect.lookup(name) << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::StringRef flag = argc == 3 ? argv[1] : "";
  bool plan = flag == "--plan" || flag == "--plan-with-passes";
  if (argc != 2 && !plan) {
    llvm::errs() << "usage: dist-client MODEL.onnx\n"
                    "       dist-client --plan W0,W1,W2[,...]\n"
                    "       dist-client --plan-with-passes W0,W1,W2[,...]\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  distopt::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  return plan ? planOwnModule(context, argv[2], flag == "--plan-with-passes")
              : importModel(context, argv[1]);
}
