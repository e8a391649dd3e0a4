// RUN: split-file %s %t
// RUN: not dist-compile --source-only -o %t/out.cpp %t/opaque.mlir 2>&1 | FileCheck %s --check-prefix=OPAQUE
// RUN: not dist-compile --source-only -o %t/out.cpp %t/dynamic.mlir 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not dist-compile --source-only -o %t/out.cpp %t/f8.mlir 2>&1 | FileCheck %s --check-prefix=F8
// RUN: not dist-compile --source-only -o %t/out.cpp %t/conv3d.mlir 2>&1 | FileCheck %s --check-prefix=CONV3D
// RUN: not dist-compile --target=tpu -o %t/out.bin %t/f8.mlir 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: dist-compile --skip-unsupported --source-only -o %t/out.cpp ok=%t/ok.mlir bad=%t/opaque.mlir 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: FileCheck %s --check-prefix=KEPT < %t/out.cpp

// OPAQUE: error: dist-compile: graph.opaque 'NonMaxSuppression' has no lowering: ONNX 'NonMaxSuppression' is not supported yet (docs/importer.md lists the ops that are). If its inputs come from shapes or constants, pin the graph inputs (--input-shape=NAME:D0xD1..., --input-value=NAME:VALUE for a scalar) so that the importer folds it away; otherwise export the model without it
// DYN: dynamic.mlir:1:1: error: dist-compile: input 'arg0' has type 'tensor<?x4xf32>'; inputs must be statically shaped
// DYN-SAME: (pin shapes with --input-shape=NAME:D0xD1...)
// F8: f8.mlir:2:8: error: graph.cast: element type 'f8E4M3FN' has no lowering (supported: f32, f64, f16, bf16, i1, i8-i64, ui8-ui64)
// CONV3D: error: graph.conv: 3-D convolution has no lowering (1-D and 2-D only)
// TARGET: unknown --target='tpu'; use cpu or cuda
// SKIP: skipped bad: dist-compile: graph.opaque 'NonMaxSuppression'
// KEPT: Models: ok
// KEPT-NOT: NonMaxSuppression

//--- opaque.mlir
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %0 = graph.opaque "NonMaxSuppression"(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}
//--- dynamic.mlir
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = graph.unary relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
//--- f8.mlir
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = graph.cast %x : (tensor<2x4xf32>) -> tensor<2x4xf8E4M3FN>
  %1 = graph.cast %0 : (tensor<2x4xf8E4M3FN>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
//--- conv3d.mlir
func.func @main(%x: tensor<1x1x4x4x4xf32>, %w: tensor<1x1x2x2x2xf32>) -> tensor<1x1x3x3x3xf32> {
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, group = 1 : i64} : (tensor<1x1x4x4x4xf32>, tensor<1x1x2x2x2xf32>) -> tensor<1x1x3x3x3xf32>
  return %0 : tensor<1x1x3x3x3xf32>
}
//--- ok.mlir
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = graph.unary tanh %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
