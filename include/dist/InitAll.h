//===- InitAll.h - Register DistOpt dialects and passes ---------*- C++ -*-===//
//
// Part of DistOpt. The public entry points a client compiler calls before it
// parses or builds DistOpt IR.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_INITALL_H
#define DIST_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace distopt {

/// Adds every DistOpt dialect (graph, dist, emit) and the upstream dialects DistOpt
/// IR uses (func, arith) to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every DistOpt pass and pass pipeline with the global registry so
/// that they can be named on a command line or in a textual pipeline.
void registerAllPasses();

} // namespace distopt

#endif // DIST_INITALL_H
