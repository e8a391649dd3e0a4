//===- Passes.td - Import passes ---------------------------*- tablegen -*-===//
//
// Part of DistOpt. The importing passes (passes/Import/, one pass per file);
// passes/Passes.h declares and registers every group.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_IMPORT_PASSES_TD
#define DIST_PASSES_IMPORT_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseExporterPatternsPass : Pass<"dist-fuse-exporter-patterns",
                                    "mlir::func::FuncOp"> {
  let summary = "folds exporters' elementwise spellings of LayerNorm, "
                "RMSNorm, GELU and SiLU back into graph ops";
  let description = [{
    Exporters at opset < 17 (and other compilers lowering to elementwise
    ops) spell normalizations and activations as chains of `graph.binary`,
    `graph.unary` and `graph.reduce` ops. The pass recognizes the chains by
    their dataflow and constants, whichever operand order the exporter
    used, and replaces each with one op:

    | chain | op |
    | --- | --- |
    | `d = x - mean(x); d / sqrt(mean(d^2) + eps) * g [+ b]` | `graph.layer_norm` |
    | `x / sqrt(mean(x^2) + eps) * g`, also `x * (1 / sqrt(...))`, `x * reciprocal(sqrt(...))` | `graph.rms_norm` |
    | `0.5 * x * (1 + erf(x / sqrt(2)))` | `graph.unary gelu` |
    | `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` | `graph.unary gelu_tanh` |
    | `x * sigmoid(x)` | `graph.unary silu` |

    Means are over the last axis only and constants are matched to 1e-4
    relative; a chain that differs in any of this (another axis, 0.6 for
    0.5, `x * sigmoid(y)`) stays as it is. The ops the chains leave without
    uses, and any other side-effect-free op without uses (an exporter's
    unused constants and shape leftovers), are erased. The ONNX importer
    applies the same rewrite (lib/Import/Fusion.cpp) to every function it
    creates; the pass is for graph IR built or lowered by another compiler.

    Example:

    ```
    dist-opt exported.mlir --dist-fuse-exporter-patterns
    ```
  }];
  let dependentDialects = ["::distopt::graph::GraphDialect"];
}

#endif // DIST_PASSES_IMPORT_PASSES_TD
