//===- EmitOps.td - Operations of the emission dialect ------*- tablegen -*-===//
#ifndef EMIT_OPS_TD
#define EMIT_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "EmitDialect.td"
include "EmitAttrs.td"
include "EmitEnums.td"

def Emit_KernelOp : Emit_Op<"kernel", [IsolatedFromAbove, Pure]> {
  let summary = "Graph ops that run as one kernel";
  let description = [{
    The body's ops compute the result in one kernel; operands enter as the
    block's arguments (one per operand, same types) and the result leaves
    through `emit.yield`. The kind says how:

    - `loop`: elementwise ops (`graph.unary`, `graph.binary`, `graph.where`,
      `graph.cast`, `graph.clip`, `graph.unary_grad`) in one generated loop;
      every op but the yielded one has one use and the yielded op's shape,
      so its value stays in a register.
    - `post_ops`: a `graph.matmul` or `graph.conv` (the anchor, first op)
      followed by a chain of elementwise ops, each reading the previous
      one's result, that oneDNN applies as post-ops before storing: an
      activation, or a binary op with a scalar, a per-channel vector or a
      tensor of the result's shape.
    - `eltwise`: one f32 `graph.unary` on the runtime's vectorized kernel.

    The verifier checks these rules (passes/Emission and the printer share
    them through dialects/Emit/KernelRules.h).

    Example:
    ```mlir
    %y = emit.kernel post_ops (%x, %w, %b) : (tensor<8x64xf32>,
        tensor<64x256xf32>, tensor<256xf32>) -> tensor<8x256xf32> {
    ^bb0(%a: tensor<8x64xf32>, %k: tensor<64x256xf32>, %c: tensor<256xf32>):
      %m = graph.matmul %a, %k : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
      %s = graph.binary add %m, %c : (tensor<8x256xf32>, tensor<256xf32>) -> tensor<8x256xf32>
      %g = graph.unary gelu_tanh %s : tensor<8x256xf32>
      emit.yield %g : tensor<8x256xf32>
    }
    ```
  }];
  let arguments = (ins Emit_KernelKindAttr:$kind, Variadic<AnyType>:$inputs);
  let results = (outs AnyType:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `(` $inputs `)` attr-dict-with-keyword `:`
    functional-type($inputs, $result) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The op whose value the kernel yields (the loop's root, the end of
    /// the post-op chain).
    ::mlir::Operation *getRoot();
    /// The matmul or convolution of a `post_ops` kernel (null otherwise).
    ::mlir::Operation *getAnchor();
  }];
}

def Emit_YieldOp : Emit_Op<"yield", [Pure, Terminator, ReturnLike,
                                      HasParent<"KernelOp">]> {
  let summary = "The value an emit.kernel computes";
  let description = [{
    Ends an `emit.kernel` body; its operand is the kernel's result.

    Example:
    ```mlir
    emit.yield %g : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Emit_CopyOp : Emit_Op<"copy", [Pure, SameOperandsAndResultType]> {
  let summary = "Materializes a strided value as a buffer of its own";
  let description = [{
    The same tensor in a buffer with the layout its `emit.buffers` names
    (row-major unless strides are given). `dist-prepare-for-emission`
    inserts it where a value laid out for one kernel (a channels-last
    convolution result, a transposed view) meets an op that reads only
    row-major memory, once per value.

    Example:
    ```mlir
    %r = emit.copy %v : tensor<2x64x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

#endif // EMIT_OPS_TD
