//===- Diagnostics.cpp - Diagnostics that name the ONNX node ----*- C++ -*-===//
//
// Part of DistOpt. Implements dist/Diagnostics.h.
//
//===----------------------------------------------------------------------===//
#include "dist/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

bool distopt::isNodeLocation(Location loc) {
  if (!scheduleDescription(loc).empty())
    return true;
  auto file = loc->findInstanceOf<FileLineColLoc>();
  return loc->findInstanceOf<NameLoc>() && (!file || file.getLine() == 0);
}

std::string distopt::describeLocation(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto file = loc->findInstanceOf<FileLineColLoc>();
  if (file) {
    os << file.getFilename().getValue();
    if (file.getLine() > 0)
      os << ":" << file.getLine() << ":" << file.getColumn();
  }
  if (StringRef schedule = scheduleDescription(loc); !schedule.empty()) {
    os << (file ? ": " : "") << schedule;
    return s;
  }
  if (auto name = loc->findInstanceOf<NameLoc>()) {
    os << (file ? ": " : "") << "node '" << name.getName().getValue() << "'";
    if (isGradientLocation(loc))
      os << " (in its gradient, built by dist-autodiff)";
  }
  return s;
}

void distopt::printDiagnostic(Diagnostic &diag, llvm::raw_ostream &os) {
  auto severity = [](DiagnosticSeverity s) {
    switch (s) {
    case DiagnosticSeverity::Error:
      return "error";
    case DiagnosticSeverity::Warning:
      return "warning";
    case DiagnosticSeverity::Remark:
      return "remark";
    case DiagnosticSeverity::Note:
      return "note";
    }
    return "note";
  };
  std::string where = describeLocation(diag.getLocation());
  os << where << (where.empty() ? "" : ": ") << severity(diag.getSeverity())
     << ": " << diag.str() << "\n";
  for (Diagnostic &note : diag.getNotes())
    printDiagnostic(note, os);
}

DiagnosticEngine::HandlerTy
distopt::nodeDiagnosticPrinter(llvm::raw_ostream &os) {
  return [&os](Diagnostic &diag) -> LogicalResult {
    if (!isNodeLocation(diag.getLocation()))
      return failure();
    printDiagnostic(diag, os);
    return success();
  };
}

distopt::NodeDiagnosticHandler::NodeDiagnosticHandler(MLIRContext *context,
                                                      llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context) {
  setHandler(nodeDiagnosticPrinter(os));
}
