//===- GraphInterfaces.td - Op interfaces of the graph dialect -*- tablegen -*-===//
//
// Part of DistOpt. The FLOP count every costed graph op reports, so that the
// autodiff pass, its tests and the cost model agree on one definition.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_INTERFACES_TD
#define DIST_GRAPH_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_FlopCountOpInterface : OpInterface<"FlopCountOpInterface"> {
  let cppNamespace = "::distopt::graph";
  let description = [{
    Floating-point operations one execution of the op performs, from its
    static operand and result shapes (a dynamic dimension counts as 1). The
    rules follow the analytic builders of `lib/Cost/ModelDesc.cpp`: a
    contraction counts `2 * M * N * K`, an elementwise op one FLOP per
    element times a per-kind factor (8 for GELU, 4 for other
    transcendentals), normalizations 8 per element forward, 10 (input
    gradient) and 2 (parameter gradient) backward, softmax 5 forward and 4
    backward, the loss 6 forward and 2 backward, data movement 0. The
    training ops in `GraphTrainOps.td` implement it directly; the forward ops
    get it as external models (`registerFlopCountModels`).
  }];
  let methods = [
    InterfaceMethod<"FLOPs of one execution", "double", "getFlopCount">
  ];
}

#endif // DIST_GRAPH_INTERFACES_TD
