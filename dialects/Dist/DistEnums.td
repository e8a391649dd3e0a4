//===- DistEnums.td - Enums of the distribution dialect ----*- tablegen -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_ENUMS_TD
#define DIST_ENUMS_TD

include "mlir/IR/EnumAttr.td"
include "DistDialect.td"

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the values of the group", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
      I32EnumAttrCase<"prod", 4>]> {
  let cppNamespace = "::distopt::dist";
  let genSpecializedAttr = 0;
}
def Dist_ReductionKindAttr : EnumAttr<Dist_Dialect, Dist_ReductionKind,
                                      "reduction">;

def Dist_TensorParallelRole : I32EnumAttr<"TensorParallelRole",
    "how an op splits under Megatron-style tensor parallelism", [
      I32EnumAttrCase<"Column", 0, "column">,
      I32EnumAttrCase<"Row", 1, "row">,
      I32EnumAttrCase<"Split", 2, "split">,
      I32EnumAttrCase<"Replicated", 3, "replicated">]> {
  let cppNamespace = "::distopt::dist";
  let genSpecializedAttr = 0;
}
def Dist_TensorParallelRoleAttr : EnumAttr<Dist_Dialect,
    Dist_TensorParallelRole, "tp"> {
  let summary = "Megatron tensor-parallel role of an op";
  let description = [{
    The role `dist-annotate-layers` gives a costed op as the discardable
    attribute `dist.tp`: `column` (a weighted op with split output; its
    input gradient is all-reduced), `row` (a weighted op reading a split
    input; its output is all-reduced), `split` (works on split activations,
    no communication) or `replicated` (every tensor-parallel rank runs it
    whole).

    Example: `graph.matmul %x, %w {dist.tp = #dist.tp<column>}`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // DIST_ENUMS_TD
