//===- PassOptions.h - Types of the passes' typed options -------*- C++ -*-===//
//
// Part of DistOpt. The enum-valued pass options (passes/*/Passes.td) use the
// cost core's own enums (element types, plan modes, objectives) and these.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PASSOPTIONS_H
#define DIST_PASSES_PASSOPTIONS_H

#include "lib/Cluster/Cluster.h"
#include "lib/Schedule/Plan.h"

namespace distopt {

/// When the search shows its progress on stderr: on a terminal (or, in a
/// log, once a second after the first second), always, or never.
enum class SearchProgress { Auto, Always, Never };

/// The spellings of the enum options: "train"/"infer",
/// "throughput"/"latency", "auto"/"always"/"never". False when \p s is none.
bool parseModeName(llvm::StringRef s, schedule::Mode &out);
bool parseObjectiveName(llvm::StringRef s, schedule::InferObjective &out);
bool parseProgressName(llvm::StringRef s, SearchProgress &out);

} // namespace distopt

#endif // DIST_PASSES_PASSOPTIONS_H
