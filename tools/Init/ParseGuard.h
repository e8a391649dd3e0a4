//===- ParseGuard.h - MLIR parser vs forward references ---------*- C++ -*-===//
//
// Part of DistOpt. MLIR 22's parser resolves a use earlier in the text
// (even one outside an isolated region, such as a function's or an
// emit.kernel's) with a value a later block defines: a block header's
// argument, or an op's result in a region with more than one block. When
// an error in a block header or a later block ends the parse, the parser
// frees the region, that value included, and then writes through the
// earlier use while it destroys the rest: heap corruption, found twice by
// dist-fuzz. mlir-opt does the same on upstream ops (two tensor.generate;
// a builtin.module whose second block does not parse, after a use of its
// first block's result at the top level). Every such text has a block
// header, so text with one is parsed once in a child process first; the
// tools parse it themselves only when it parses.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TOOLS_INIT_PARSEGUARD_H
#define DIST_TOOLS_INIT_PARSEGUARD_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace distopt {

/// Whether \p text has a block header (`^name(` or `^name:`, outside
/// comments and strings): the only text on which MLIR's parser can meet
/// the defect above. Cheap; a superset of the dangerous inputs.
bool hasBlockHeader(llvm::StringRef text);

/// Succeeds when \p text may be parsed in this process: it has no block
/// header, or it parsed in a child process (with
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
