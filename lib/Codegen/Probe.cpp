//===- Probe.cpp - Would dist-compile build this model? ---------*- C++ -*-===//
//
// Part of DistOpt. A dry run of emitModel that writes nothing and keeps the
// first error, so that the planner can say before it prints a plan that
// dist-compile cannot build the model's programs, and why.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/Codegen.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

std::optional<std::pair<Location, std::string>>
distopt::codegen::findUnsupported(ModuleOp module, llvm::StringRef funcName) {
  std::optional<std::pair<Location, std::string>> first;
  {
    // Swallows every diagnostic of the dry run; the caller reports.
    ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && !first)
        first.emplace(d.getLocation(), d.str());
      return success();
    });
    ModelUnit unit{"probe", "", "", module, funcName.str()};
    CodegenOptions options;
    llvm::raw_null_ostream sink;
    if (succeeded(emitModel(unit, "probe", options, sink)))
      return std::nullopt;
  }
  if (!first)
    first.emplace(module.getLoc(), "code generation failed");
  return first;
}
