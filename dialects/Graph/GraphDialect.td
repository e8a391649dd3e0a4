//===- GraphDialect.td - The graph dialect -----------------*- tablegen -*-===//
//
// Part of DistOpt. The dialect of normalized DNN operators that the ONNX
// importer produces and every later pass consumes.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_DIALECT_TD
#define DIST_GRAPH_DIALECT_TD

include "mlir/IR/OpBase.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::distopt::graph";
  let summary = "Normalized deep-learning operators, close to ONNX semantics";
  let description = [{
    The `graph` dialect holds the operators of a deep-learning model as a
    `func.func` of ops on ranked tensors. It is close to ONNX semantics but
    normalized: one `graph.matmul` for MatMul and Gemm, one `graph.unary` and
    one `graph.binary` op with a kind enum for elementwise math, one
    `graph.reduce` with a kind, and so on. Weights are never inlined:
    `graph.weight` references their bytes by file and offset. Anything the
    dialect does not model is kept as `graph.opaque`, with its ONNX op type,
    domain, attributes and inferred result types, so every model can still be
    planned.

    Shapes in this dialect are static wherever the importer could pin them;
    verifiers check every invariant that follows from the operands (ranks,
    broadcasting, permutations, axis ranges and result shapes) and skip only
    dimensions that are dynamic.
  }];
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

#endif // DIST_GRAPH_DIALECT_TD
