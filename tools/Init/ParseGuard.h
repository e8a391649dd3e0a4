//===- ParseGuard.h - MLIR parser vs forward block args ---------*- C++ -*-===//
//
// Part of DistOpt. MLIR 22's parser lets a block argument named in a block
// header (`^bb0(%a: T):`) resolve a use of `%a` earlier in the text, even
// one in another region. When an error later in that region ends the
// parse, the parser frees the region, block argument included, and then
// writes through the earlier use while it destroys the rest: heap
// corruption, found by dist-fuzz (mlir-opt does the same on upstream ops,
// e.g. two tensor.generate). Text where that can happen is parsed once in a
// child process first; the tools parse it themselves only when it parses.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TOOLS_INIT_PARSEGUARD_H
#define DIST_TOOLS_INIT_PARSEGUARD_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace distopt {

/// Whether \p text has a block header whose argument's name occurs earlier
/// in the text: the only text on which MLIR's parser can meet the defect
/// above. Cheap; a superset of the dangerous inputs.
bool mayForwardUseBlockArgument(llvm::StringRef text);

/// Succeeds when \p text may be parsed in this process: it has no forward
/// use of a block argument, or it parsed in a child process (with
/// \p registry; unregistered dialects per \p allowUnregistered). Fails when
/// the child's parse failed; the child printed the parser's errors
/// (`NAME:LINE:COL: error: ...`, \p bufferName naming the text) to stderr,
/// unless \p quiet.
mlir::LogicalResult checkParseInChild(llvm::StringRef text,
                                      llvm::StringRef bufferName,
                                      const mlir::DialectRegistry &registry,
                                      bool allowUnregistered, bool quiet);

} // namespace distopt

#endif // DIST_TOOLS_INIT_PARSEGUARD_H
