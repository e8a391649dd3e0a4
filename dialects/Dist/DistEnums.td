//===- DistEnums.td - Enums of the distribution dialect ----*- tablegen -*-===//
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

#endif // DIST_ENUMS_TD
