//===- GraphDialect.h - The graph dialect -----------------------*- C++ -*-===//
//
// Part of DistOpt. Declares the `graph` dialect of normalized DNN operators.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIALECTS_GRAPH_GRAPHDIALECT_H
#define DIST_DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Graph/GraphDialect.h.inc"

#endif // DIST_DIALECTS_GRAPH_GRAPHDIALECT_H
