//===- Diagnostics.h - Diagnostics that name the ONNX node ------*- C++ -*-===//
//
// Part of DistOpt. The importer gives every op the location
// `NameLoc(<ONNX node name>, FILE:0:0)`; dist-autodiff wraps the location of
// the ops it builds for a forward op in `FusedLoc<"gradient">[<that op's
// location>]`. These helpers turn such locations into what a user wrote
// ("llama.onnx: node '/model/decoder/Tile'") instead of "llama.onnx:0:0".
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIAGNOSTICS_H
#define DIST_DIAGNOSTICS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace distopt {

/// Metadata of the FusedLoc that marks an op dist-autodiff built for the
/// gradient of the op whose location it wraps.
inline constexpr llvm::StringLiteral kGradientLocTag = "gradient";

/// Whether `loc` is, or holds, the location of a gradient op.
inline bool isGradientLocation(mlir::Location loc) {
  bool found = false;
  loc->walk([&](mlir::Location l) {
    if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(l))
      if (auto tag = llvm::dyn_cast_or_null<mlir::StringAttr>(
              fused.getMetadata());
          tag && tag.getValue() == kGradientLocTag)
        found = true;
    return found ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  return found;
}

/// The location of an op dist-autodiff builds for the gradient of an op at
/// `forward` (a gradient location stays as it is). Header-only, so that the
/// passes need not link the tools' support library.
inline mlir::Location gradientLocation(mlir::Location forward) {
  if (isGradientLocation(forward))
    return forward;
  mlir::MLIRContext *ctx = forward->getContext();
  return mlir::FusedLoc::get(ctx, {forward},
                             mlir::StringAttr::get(ctx, kGradientLocTag));
}

/// Metadata of the FusedLoc that marks an op of a schedule written by the
/// compiler (dist-partition, dist-materialize-schedule): it has no source
/// line, so it is described by its place in the schedule.
inline constexpr llvm::StringLiteral kScheduleLocTag = "schedule";

/// The location of a schedule op the compiler writes for `function` (at
/// that function's location), described as `what` ("schedule of
/// @train_step, list 1, action 3 'B0.1'").
inline mlir::Location scheduleLocation(mlir::Location function,
                                       const llvm::Twine &what) {
  mlir::MLIRContext *ctx = function->getContext();
  return mlir::FusedLoc::get(
      ctx, {mlir::NameLoc::get(mlir::StringAttr::get(ctx, what)), function},
      mlir::StringAttr::get(ctx, kScheduleLocTag));
}

/// The description of a scheduleLocation (empty for other locations).
inline llvm::StringRef scheduleDescription(mlir::Location loc) {
  auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc);
  auto tag = fused ? llvm::dyn_cast_or_null<mlir::StringAttr>(
                         fused.getMetadata())
                   : mlir::StringAttr();
  if (!tag || tag.getValue() != kScheduleLocTag)
    return {};
  auto name = llvm::dyn_cast<mlir::NameLoc>(fused.getLocations().front());
  return name ? name.getName().getValue() : llvm::StringRef();
}

/// The candidate closest to `word` by edit distance (empty when there is
/// none), and that distance, for "did you mean" suggestions.
inline std::pair<llvm::StringRef, unsigned>
closestSpelling(llvm::ArrayRef<llvm::StringRef> candidates,
                llvm::StringRef word) {
  llvm::StringRef best;
  unsigned bestDistance = ~0u;
  for (llvm::StringRef c : candidates) {
    unsigned d = c.edit_distance(word, /*AllowReplacements=*/true);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return {best, bestDistance};
}

/// What a user can do about an ONNX op the importer keeps opaque, ending a
/// message that says the op is in the way.
inline std::string opaqueAdvice(llvm::StringRef opType) {
  return ("ONNX '" + opType +
          "' is not supported yet (docs/importer.md lists the ops that are). "
          "If its inputs come from shapes or constants, pin the graph inputs "
          "(--input-shape=NAME:D0xD1..., --input-value=NAME:VALUE for a "
          "scalar) so that the importer folds it away; otherwise export the "
          "model without it")
      .str();
}

/// True when `loc` names an ONNX node (a NameLoc) and no source line: the
/// importer's locations, and those of ops built from them; and for a
/// schedule op the compiler wrote (scheduleLocation).
bool isNodeLocation(mlir::Location loc);

/// "FILE: node 'NAME'" (" (in its gradient, built by dist-autodiff)" for
/// gradient ops), "FILE:LINE:COL" for source locations, "FILE" alone;
/// "FILE: schedule of @f, list L, action I 'A'" for a written schedule op.
std::string describeLocation(mlir::Location loc);

/// Prints `diag` (and its notes) as "WHERE: error: message" with
/// describeLocation.
void printDiagnostic(mlir::Diagnostic &diag, llvm::raw_ostream &os);

/// The handler that prints diagnostics at node locations (isNodeLocation)
/// with printDiagnostic and leaves the others to the handlers registered
/// before it.
mlir::DiagnosticEngine::HandlerTy nodeDiagnosticPrinter(llvm::raw_ostream &os);

/// Registers nodeDiagnosticPrinter on \p context for the context's life
/// (for contexts a caller does not own, such as MlirOptMain's).
inline void registerNodeDiagnostics(mlir::MLIRContext *context,
                                    llvm::raw_ostream &os) {
  context->getDiagEngine().registerHandler(nodeDiagnosticPrinter(os));
}

/// While alive, prints every diagnostic at a node location (isNodeLocation)
/// with printDiagnostic; the others go on to the handlers registered
/// before (e.g. a SourceMgrDiagnosticHandler, which shows source lines).
class NodeDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  NodeDiagnosticHandler(mlir::MLIRContext *context, llvm::raw_ostream &os);
};

} // namespace distopt

#endif // DIST_DIAGNOSTICS_H
