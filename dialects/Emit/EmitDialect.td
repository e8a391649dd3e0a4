//===- EmitDialect.td - What the program printer is told ----*- tablegen -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef EMIT_DIALECT_TD
#define EMIT_DIALECT_TD

include "mlir/IR/OpBase.td"

def Emit_Dialect : Dialect {
  let name = "emit";
  let cppNamespace = "::distopt::emit";
  let summary = "Emission decisions: kernels, buffers, layouts, precision";
  let description = [{
    The `emit` dialect records, in the IR, every decision the C++/CUDA
    printer of `dist-compile` used to make while printing
    (`dist-prepare-for-emission` makes them; the printer only prints):

    - which ops run as one kernel: `emit.kernel` regions (a fused
      elementwise loop, a matmul or convolution with its elementwise chain
      as oneDNN post-ops, an elementwise op on the runtime's vector kernel);
    - where every value lives: `emit.buffers` on each op (a slot of the
      function's arena, a strided view of another value, or a resident
      buffer kept across runs), `emit.buffer` on function arguments, and
      the function's `emit.memory_plan` (arena size), which the dialect
      verifies against the live ranges of the body;
    - the physical layout of every value: row-major, or the strides of its
      slot or view (channels-last for convolution chains, transposed and
      sliced views read in place by matmuls);
    - precision: `emit.compute_type = f32` on ops whose runtime kernel
      computes in f32 only (the printer widens their 16-bit operands);
    - overlap: `emit.async` on a `dist.all_reduce` whose result is first
      read some ops later: the printer starts it where it stands
      (`distrt_all_reduce_start`) and waits for it (`distrt_wait`) right
      before that reader, and its operand's slot lives until the wait.

    docs/codegen.md ("How a program is generated") describes the printer
    that reads them; docs/design.md says why the decisions live in the IR.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let dependentDialects = ["::distopt::graph::GraphDialect"];
}

class Emit_Op<string mnemonic, list<Trait> traits = []>
    : Op<Emit_Dialect, mnemonic, traits>;

#endif // EMIT_DIALECT_TD
