//===- client.cpp - A client of the installed DistOpt package --*- C++ -*-===//
//
// A small compiler that uses DistOpt only through its installed CMake
// package and the public headers under include/dist/.
//
//   dist-client MODEL.onnx   imports the model, verifies it and prints how
//                            many operations of each dialect it has;
//   dist-client --plan W0,W1,..
//                            builds an MLP of those widths itself, plans it
//                            with planModule (two pipeline stages on a CPU
//                            preset) and prints what the plan wrote.
//
//===----------------------------------------------------------------------===//
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "dist/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

/// The graph-dialect text of an MLP over a batch of 8 with layer widths
/// \p widths (input first): matmul and relu per layer, no relu after the
/// last.
static std::string mlpSource(const std::vector<unsigned> &widths) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto tensor = [&](unsigned a, unsigned b) {
    return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>";
  };
  os << "func.func @main(%x: " << tensor(8, widths.front()) << ") -> "
     << tensor(8, widths.back()) << " {\n";
  std::string value = "%x";
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    std::string in = tensor(8, widths[i]), out = tensor(8, widths[i + 1]);
    std::string w = "%w" + std::to_string(i), h = "%h" + std::to_string(i);
    os << "  " << w << " = graph.weight \"w" << i << "\" : "
       << tensor(widths[i], widths[i + 1]) << "\n";
    os << "  " << h << " = graph.matmul " << value << ", " << w << " : ("
       << in << ", " << tensor(widths[i], widths[i + 1]) << ") -> " << out
       << "\n";
    value = h;
    if (i + 2 < widths.size()) {
      std::string r = "%r" + std::to_string(i);
      os << "  " << r << " = graph.unary relu " << h << " : (" << out
         << ") -> " << out << "\n";
      value = r;
    }
  }
  os << "  return " << value << " : " << tensor(8, widths.back()) << "\n}\n";
  return text;
}

/// Builds an MLP of \p widthList ("16,64,64,4"), plans it through
/// planModule and prints the plan, the stage functions and the schedule.
static int planOwnModule(mlir::MLIRContext &context,
                         llvm::StringRef widthList) {
  std::vector<unsigned> widths;
  for (llvm::StringRef w : llvm::split(widthList, ',')) {
    unsigned width = 0;
    if (w.getAsInteger(10, width) || width == 0) {
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
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(mlpSource(widths), &context);
  if (!module)
    return 1;

  distopt::PlanOptions options;
  options.cluster = "cpu-xeon-2s";
  options.plan = "pp=2,mbs=2";
  options.batch = 8;
  if (mlir::failed(distopt::planModule(*module, options)))
    return 1;
  if (mlir::failed(mlir::verify(*module)))
    return 1;

  if (mlir::Attribute plan = (*module)->getAttr("dist.plan"))
    llvm::outs() << "plan: " << plan << "\n";
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
  bool plan = argc == 3 && llvm::StringRef(argv[1]) == "--plan";
  if (argc != 2 && !plan) {
    llvm::errs() << "usage: dist-client MODEL.onnx\n"
                    "       dist-client --plan W0,W1,W2[,...]\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  distopt::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  return plan ? planOwnModule(context, argv[2]) : importModel(context, argv[1]);
}
