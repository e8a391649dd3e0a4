// RUN: dist-compile --source-only -o - %s | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t/fused %t/plain
// RUN: dist-compile %s -o %t/fused.bin
// RUN: dist-compile %s --prepare-options="post-ops=false channels-last=false" -o %t/plain.bin
// RUN: %python %S/Inputs/npy.py write %t/x.npy f4 2x3x10 0.5 -1.25 0.75 2 -0.3 1.1 -2.2
// RUN: %python %S/Inputs/npy.py write %t/w.npy f4 4x3x3 0.2 -0.4 0.3 0.1 -0.25
// RUN: %python %S/Inputs/npy.py write %t/b.npy f4 4 0.1 -0.2 0.3 -0.4
// RUN: %python %S/Inputs/npy.py write %t/c.npy f4 4x1 -0.5 0.25 1 -1
// RUN: %python %S/Inputs/npy.py write %t/r.npy f4 2x4x5 1 -2 0.5 0.25 -0.75 3
// RUN: %python %S/Inputs/npy.py write %t/p.npy f4 2x4x1 0.5 -1 2 0.25 -0.5 1.5 -2 1
// RUN: %t/fused.bin x=%t/x.npy w=%t/w.npy b=%t/b.npy c=%t/c.npy r=%t/r.npy p=%t/p.npy -o %t/fused
// RUN: %t/plain.bin x=%t/x.npy w=%t/w.npy b=%t/b.npy c=%t/c.npy r=%t/r.npy p=%t/p.npy -o %t/plain
// RUN: %python %S/Inputs/npy.py close %t/fused/y.npy %t/plain/y.npy 1e-6
// A 1-D convolution ([N, C, L]) runs as a 2-D one of height 1, channels-
// last (NWC, copies of x and r made once), and the elementwise chain after
// it folds into the oneDNN primitive as post-ops, as for 2-D: x, y, the
// per-channel operand [4, 1] and the residual [2, 4, 5] are read as
// [2, 3, 1, 10], [2, 4, 1, 5], [4, 1, 1] and [2, 4, 1, 5], views with
// the unit height and NHWC strides. A per-image operand ([2, 4, 1], one
// value per image and channel) is no post-op: oneDNN 2.6 would apply the
// first image's values to both on a channels-last output
// (docs/runtime-abi.md), so that add is a generated loop after the call.
// The program agrees with the same one built without post-ops and
// channels-last (NCW, a plain convolution, then generated loops).

// CHECK-LABEL: static int run(dg::Program &P) {
// CHECK: distrt_tensor x = dg::TS({{v[0-9]+}}, DISTRT_F32, {2, 3, 1, 10}, {30, 1, 30, 3}), w = dg::T({{v[0-9]+}}, DISTRT_F32, {4, 3, 1, 3}), y = dg::TS({{v[0-9]+}}, DISTRT_F32, {2, 4, 1, 5}, {20, 1, 20, 4}), bias = dg::T({{v[0-9]+}}, DISTRT_F32, {4});
// CHECK-NEXT: distrt_conv2d_attr at = {{[{][{]}}1, 2}, {0, 1}, {0, 1}, {1, 1}, 1};
// CHECK: ex.count = 3;
// CHECK-NEXT: ex.post[0].kind = DISTRT_POST_BINARY;
// CHECK-NEXT: ex.post[0].alg = DISTRT_BINARY_ADD;
// CHECK-NEXT: ex.post[0].src1 = dg::T({{v[0-9]+}}, DISTRT_F32, {4, 1, 1});
// CHECK-NEXT: ex.post[1].kind = DISTRT_POST_ELTWISE;
// CHECK-NEXT: ex.post[1].alg = DISTRT_ELTWISE_GELU;
// CHECK-NEXT: ex.post[2].kind = DISTRT_POST_BINARY;
// CHECK-NEXT: ex.post[2].alg = DISTRT_BINARY_ADD;
// CHECK-NEXT: ex.post[2].src1 = dg::TS({{v[0-9]+}}, DISTRT_F32, {2, 4, 1, 5}, {20, 1, 20, 4});
// CHECK: distrt_conv2d_ex(P.ctx, &x, &w, &bias, &y, &at, &ex)
// CHECK-NOT: dg::gelu
// CHECK: DG_SIMD
// CHECK: (([[T:t[0-9]+]] + [[P:t[0-9]+]]))

module {
  func.func @main(%x: tensor<2x3x10xf32> {graph.name = "x"}, %w: tensor<4x3x3xf32> {graph.name = "w"}, %b: tensor<4xf32> {graph.name = "b"}, %c: tensor<4x1xf32> {graph.name = "c"}, %r: tensor<2x4x5xf32> {graph.name = "r"}, %p: tensor<2x4x1xf32> {graph.name = "p"}) -> (tensor<2x4x5xf32> {graph.name = "y"}) {
    %0 = graph.conv %x, %w, %b {strides = array<i64: 2>, pads = array<i64: 1, 1>, dilations = array<i64: 1>} : (tensor<2x3x10xf32>, tensor<4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5xf32>
    %1 = graph.binary add %0, %c : (tensor<2x4x5xf32>, tensor<4x1xf32>) -> tensor<2x4x5xf32>
    %2 = graph.unary gelu %1 : (tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
    %3 = graph.binary add %2, %r : (tensor<2x4x5xf32>, tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
    %4 = graph.binary add %3, %p : (tensor<2x4x5xf32>, tensor<2x4x1xf32>) -> tensor<2x4x5xf32>
    return %4 : tensor<2x4x5xf32>
  }
}
