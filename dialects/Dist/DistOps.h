//===- DistOps.h - Operations of the distribution dialect -------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_DIST_DISTOPS_H
#define DIALECTS_DIST_DISTOPS_H

#include "dialects/Dist/DistDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "lib/Schedule/Schedule.h"

#include "dialects/Dist/DistInterfaces.h.inc"

namespace distopt::dist {
/// Custom assembly of collective groups: `world` (every rank, an empty
/// group) or `[d0, d1, ...]`.
mlir::ParseResult parseWorldGroup(mlir::OpAsmParser &parser,
                                  mlir::DenseI64ArrayAttr &group);
void printWorldGroup(mlir::OpAsmPrinter &printer, mlir::Operation *op,
                     mlir::DenseI64ArrayAttr group);
} // namespace distopt::dist

#define GET_OP_CLASSES
#include "dialects/Dist/DistOps.h.inc"

#endif // DIALECTS_DIST_DISTOPS_H
