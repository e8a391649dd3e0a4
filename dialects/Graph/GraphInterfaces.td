//===- GraphInterfaces.td - Op interfaces of the graph dialect -*- tablegen -*-===//
//
// Part of DistOpt. What every costed graph op costs, so that the planner,
// the autodiff pass, its tests and the cost model agree on one definition.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_INTERFACES_TD
#define DIST_GRAPH_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::distopt::graph";
  let description = [{
    What one execution of the op costs, from its static operand and result
    shapes (a dynamic dimension counts as 1), as the cost core's
    `cost::OpDesc`: the op class, the element type it is costed in, FLOPs
    and bytes read and written by the forward, backward-input and
    backward-weight phases, the activation bytes saved for backward, and the
    parameters it would train. The forward ops get it as external models
    (`registerCostModels`, GraphCost.cpp) that call the builders of
    `lib/Cost/ModelDesc.h`: a contraction counts `2 * M * N * K` forward and
    the same again for each operand gradient, an elementwise op one FLOP
    per element times a per-kind factor (8 for GELU, 4 for other
    transcendentals), normalizations 8 per element forward, 10 (input
    gradient) and 2 (parameter gradient) backward, softmax 5 forward and 4
    backward, the loss 6 forward and 2 backward, data movement 0. Views and
    reads of stored data (reshape, flatten, weight, constant, state) cost
    nothing. The training ops in `GraphTrainOps.td` are what a backward
    phase executes: they give their FLOPs and are costed as run once.

    `getFlopCount` is the forward FLOPs of `getCost` in its default
    context; the autodiff tests compare the explicit backward ops' counts
    with the forward ops' analytic backward costs.
  }];
  let methods = [
    InterfaceMethod<[{
        The cost of one execution, costed as `context` says (element type,
        which operands are weights); none for an op that does no per-sample
        work (views, weight reads).
      }],
      "std::optional<::distopt::cost::OpDesc>", "getCost",
      (ins "const ::distopt::graph::CostContext &":$context), [{}], [{
        return ::distopt::graph::executedCost($_op, context,
                                              $_op.getFlopCount());
      }]>,
    InterfaceMethod<"FLOPs of one execution", "double", "getFlopCount">
  ];
}

#endif // DIST_GRAPH_INTERFACES_TD
