//===- GraphOps.h - Ops of the graph dialect --------------------*- C++ -*-===//
//
// Part of DistOpt. Declares the ops and enums of the `graph` dialect.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIALECTS_GRAPH_GRAPHOPS_H
#define DIST_DIALECTS_GRAPH_GRAPHOPS_H

#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Graph/GraphEnums.h.inc"
#include "dialects/Graph/GraphInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.h.inc"

namespace distopt::graph {
/// Attaches CostOpInterface to the forward ops (GraphCost.cpp).
void registerCostModels(mlir::MLIRContext *context);
} // namespace distopt::graph

#endif // DIST_DIALECTS_GRAPH_GRAPHOPS_H
