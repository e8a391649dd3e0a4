//===- EmitEnums.td - Enums of the emission dialect ---------*- tablegen -*-===//
#ifndef EMIT_ENUMS_TD
#define EMIT_ENUMS_TD

include "mlir/IR/EnumAttr.td"
include "EmitDialect.td"

def Emit_KernelKind : I32EnumAttr<"KernelKind",
    "how the ops of an emit.kernel region run", [
      I32EnumAttrCase<"loop", 0>, I32EnumAttrCase<"post_ops", 1>,
      I32EnumAttrCase<"eltwise", 2>]> {
  let cppNamespace = "::distopt::emit";
  let genSpecializedAttr = 0;
}
def Emit_KernelKindAttr : EnumAttr<Emit_Dialect, Emit_KernelKind,
                                   "kernel_kind">;

def Emit_BufferKind : I32EnumAttr<"BufferKind", "where a value lives", [
      I32EnumAttrCase<"arena", 0>, I32EnumAttrCase<"view", 1>,
      I32EnumAttrCase<"resident", 2>, I32EnumAttrCase<"argument", 3>,
      I32EnumAttrCase<"result", 4>]> {
  let cppNamespace = "::distopt::emit";
  let genSpecializedAttr = 0;
}

#endif // EMIT_ENUMS_TD
