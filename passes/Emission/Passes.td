//===- Passes.td - Emission passes -------------------------*- tablegen -*-===//
//
// Part of DistOpt. The emission passes (passes/Emission/, one pass per file);
// passes/Passes.h declares and registers every group.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_EMISSION_PASSES_TD
#define DIST_PASSES_EMISSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrepareForEmissionPass : Pass<"dist-prepare-for-emission",
                                  "mlir::ModuleOp"> {
  let summary = "records the program printer's decisions in the IR";
  let description = [{
    Makes every decision the C++/CUDA printer of `dist-compile` needs and
    writes it into the IR with the `emit` dialect, so the printer prints
    what the IR says (the split CIRCT's ExportVerilog makes between its
    PrepareForEmission pass and its emitter). On every function body, and
    on every `dist.stage` body of a pipelined function:

    0. tensor-parallel region entries (`dist.tp_copy`, the identity once
       dist-autodiff gave it its gradient) are replaced by their input;

    1. precision: ops whose runtime kernel computes in f32 only and that
       have a 16-bit float operand or result get `emit.compute_type = f32`;
    2. kernels (`emit.kernel`): on the CPU a matmul or 2-D convolution takes
       the chain of elementwise ops after it as oneDNN post-ops (bias,
       activation, residual add, scaling); the other elementwise ops fuse
       into generated loops (an op whose one use is an elementwise op of the
       same result shape is computed in its user's loop); with
       `eltwise-kernels` a lone f32 transcendental op (gelu, tanh, exp, ...)
       runs on the runtime's vectorized eltwise kernel;
    3. layouts: reshape, flatten, inference dropout, transpose, slice and
       split results are views of their operand's memory with the strides
       they are read with (`#emit.buffer<view, offset, strides>`); on the
       CPU a 2-D convolution writes channels-last (NHWC) and pooling and
       elementwise loops keep their input's layout, so a convolution chain
       is not reordered per op; where a reader needs another layout
       (row-major for most runtime kernels and for returned values, the
       output's for a convolution's input) `emit.copy` makes it, once per
       value;
    4. memory: weights, constants and optimizer state are resident (filled
       on the first run and kept); inputs and every other result get a slot
       of the body's arena, reused by values whose live ranges do not
       overlap and written in place over an operand a kernel reads for the
       last time; the body's owner gets `emit.memory_plan`;
    5. overlap (before memory): an all-reduce whose result is first read
       some ops later (a data-parallel gradient, reduced where the backward
       made it) gets `emit.async`: the program starts it there and waits
       right before that reader, so the ops between (the rest of the
       backward) run while it moves data, and its operand's slot lives
       until the wait.

    The emit dialect verifies the result: kernel legality, view strides,
    and that no two live values share arena bytes. Functions that already
    have a plan are left alone.

    Example:

    ```
    dist-opt model.mlir --dist-prepare-for-emission
    dist-opt model.mlir --dist-prepare-for-emission="target=cuda"
    ```
  }];
  let options = [
    Option<"target", "target", "::distopt::EmissionTarget",
           "::distopt::EmissionTarget::CPU",
           "What the printed program runs on (post-ops and eltwise kernels "
           "are the CPU runtime's)",
           [{::llvm::cl::values(
               clEnumValN(::distopt::EmissionTarget::CPU, "cpu",
                          "host C++ against the oneDNN runtime"),
               clEnumValN(::distopt::EmissionTarget::CUDA, "cuda",
                          "CUDA C++ against the cuBLAS/cuDNN runtime"))}]>,
    Option<"postOps", "post-ops", "bool", "true",
           "Fold elementwise chains into the matmul or convolution before "
           "them (CPU)">,
    Option<"inPlace", "in-place", "bool", "true",
           "Let kernels write their result over an operand they read last">,
    Option<"views", "views", "bool", "true",
           "Read transposes, slices and splits in place (strided views) "
           "where their readers take strides">,
    Option<"channelsLast", "channels-last", "bool", "true",
           "Keep chains of 2-D convolutions, pooling and their elementwise "
           "ops in NHWC (CPU)">,
    Option<"asyncCollectives", "async-collectives", "bool", "true",
           "Start an all-reduce where it stands and wait for it before its "
           "first reader, when ops lie between (emit.async)">,
    Option<"eltwiseKernels", "eltwise-kernels", "bool", "false",
           "Run a lone f32 transcendental op (gelu, tanh, exp, ...) on the "
           "runtime's vectorized kernel (CPU); off by default because its "
           "results differ in the last bits from the generated loop's, so a "
           "function cut into pipeline stages (where such an op may stand "
           "alone) would not compute the unstaged program's bits">
  ];
  let dependentDialects = ["distopt::emit::EmitDialect",
                           "distopt::graph::GraphDialect"];
}

#endif // DIST_PASSES_EMISSION_PASSES_TD
