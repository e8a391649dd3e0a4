//===- Trainable.cpp - Which weights a training step updates ----*- C++ -*-===//
//
// Part of DistOpt. Implements Trainable.h.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/Trainable.h"

#include "dialects/Graph/GraphOps.h"
#include "dist/Diagnostics.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/GlobPattern.h"

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;

namespace {
/// One `freeze=` or `train-only=` glob and whether it named a weight.
struct Glob {
  std::string text;
  llvm::GlobPattern pattern;
  bool used = false;
};
} // namespace

/// Compiles the globs of option `option`; fails with an error on `func`.
static LogicalResult compileGlobs(func::FuncOp func, StringRef option,
                                  ArrayRef<std::string> texts,
                                  SmallVectorImpl<Glob> &globs) {
  for (const std::string &text : texts) {
    auto pattern = llvm::GlobPattern::create(text);
    if (!pattern)
      return func.emitError("dist-autodiff: ")
             << option << "=" << text << " is not a valid name pattern ("
             << llvm::toString(pattern.takeError())
             << "); use * and ? wildcards or [abc]";
    globs.push_back({text, std::move(*pattern)});
  }
  return success();
}

/// Whether any of `globs` matches `name` (marking the ones that do).
static bool matchAny(MutableArrayRef<Glob> globs, StringRef name) {
  bool any = false;
  for (Glob &glob : globs)
    if (glob.pattern.match(name)) {
      glob.used = true;
      any = true;
    }
  return any;
}

FailureOr<autodiff::WeightSelection>
autodiff::selectTrainable(func::FuncOp func, ArrayRef<std::string> freeze,
                          ArrayRef<std::string> trainOnly) {
  SmallVector<Glob> freezeGlobs, onlyGlobs;
  if (failed(compileGlobs(func, "freeze", freeze, freezeGlobs)) ||
      failed(compileGlobs(func, "train-only", trainOnly, onlyGlobs)))
    return failure();

  // Float weights by name (a weight read twice is one tensor).
  llvm::MapVector<StringRef, SmallVector<g::WeightOp>> byName;
  func.walk([&](g::WeightOp w) {
    if (isa<FloatType>(w.getType().getElementType()))
      byName[w.getSymName()].push_back(w);
  });
  WeightSelection selection;
  SmallVector<StringRef> names;
  for (auto &[name, ops] : byName) {
    names.push_back(name);
    StringRef inModel;
    for (g::WeightOp w : ops)
      if (auto why = w.getFrozen())
        inModel = *why;
    // Every glob is matched, so that one naming only constants still
    // counts as used.
    bool frozenByOption = matchAny(freezeGlobs, name);
    bool selected = onlyGlobs.empty() || matchAny(onlyGlobs, name);
    StringRef reason = !inModel.empty() ? inModel
                       : frozenByOption  ? "freeze"
                       : !selected       ? "train-only"
                                         : "";
    if (reason.empty())
      continue;
    for (g::WeightOp w : ops)
      selection.frozenOps.insert(w);
    selection.frozen.push_back(
        {name.str(), ops.front().getType().getNumElements(), reason.str()});
  }
  for (auto [option, globs] :
       {std::pair<StringRef, ArrayRef<Glob>>{"freeze", freezeGlobs},
        {"train-only", onlyGlobs}})
    for (const Glob &glob : globs)
      if (!glob.used) {
        auto diag = func.emitError("dist-autodiff: ")
                    << option << "=" << glob.text
                    << " names no float weight of the model";
        if (names.empty())
          diag << " (it has none)";
        else
          diag << "; the closest name is '" << closestSpelling(names, glob.text).first
               << "' (dist-opt MODEL prints every graph.weight)";
        return failure();
      }
  return selection;
}
