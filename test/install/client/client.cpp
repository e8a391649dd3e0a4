//===- client.cpp - A client of the installed DistOpt package --*- C++ -*-===//
//
// Imports an ONNX model through the public API, verifies the module and
// prints how many operations of each dialect it has.
//
//===----------------------------------------------------------------------===//
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: dist-client MODEL.onnx\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  distopt::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  distopt::ONNXImportOptions options;
  options.weights = distopt::WeightPolicy::Ignore;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      distopt::importONNXFile(argv[1], &context, options);
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
