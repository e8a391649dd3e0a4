// RUN: dist-compile --source-only -o - %s | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && dist-compile %s -o %t/reduce.bin
// RUN: %python %S/Inputs/npy.py write %t/x.npy f4 3x4x70 0.5 -1 7 3 -2 1.5 7 0.125
// RUN: %t/reduce.bin x=%t/x.npy -o %t
// RUN: %python %S/Inputs/reduce_check.py %t
// Sums over axes followed by at least 8 kept elements (bias gradients:
// [tokens, features] over the tokens) run by rows on the CPU: a task adds
// whole rows into a tile of 64 per-column accumulators (the last tile
// partial here: 70 columns), also with kept axes before the reduced ones. The rows are added in order, as the loop per
// output adds them, so the results are the same bits; reduce_check.py
// checks them exactly. A sum over a trailing axis keeps the loop per output.
// An arg_max with select_last_index (ONNX's) takes the last of equal maxima.

// CHECK-LABEL: static int run(dg::Program &P) {
// CHECK: if (dg::parallelRows<2, 768>(P, [=] (int64_t lo, int64_t hi) {
// CHECK: const int64_t o = t / 2, c0 = t % 2 * 64, n = c0 + 64 < 70 ? 64 : 70 - c0;
// CHECK: for (int64_t r = 0; r < 12; ++r) {
// CHECK: const float *x = v0 + (o * 12 + r) * 70 + c0;
// CHECK: a += v;
// CHECK: if (dg::parallelRows<2, 768>(P, [=] (int64_t lo, int64_t hi) {
// CHECK: a += v * v;
// CHECK: {{v[0-9]+}}[o * 70 + c0 + j] = (float)(sqrt((double)a)); }
// CHECK: if (dg::parallelRows<6, 256>(P, [=] (int64_t lo, int64_t hi) {
// CHECK: const float *x = v0 + (o * 4 + r) * 70 + c0;
// CHECK: {{v[0-9]+}}[o * 70 + c0 + j] = (float)(a / 4); }
// CHECK: if (dg::parallelFor<12>(P, [=] DG_HD (int64_t o) {
// arg_max with select_last_index: the last of equal maxima wins.
// CHECK: if (v >= best) { best = v; at = r; }

module {
  func.func @main(%x: tensor<3x4x70xf32> {graph.name = "x"}) -> (tensor<70xf32> {graph.name = "sum"}, tensor<1x1x70xf32> {graph.name = "l2"}, tensor<3x70xf32> {graph.name = "mean"}, tensor<3x4xf32> {graph.name = "last"}, tensor<3x70xi64> {graph.name = "argmax_last"}) {
    %0 = graph.reduce sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4x70xf32>) -> tensor<70xf32>
    %1 = graph.reduce l2 %x {axes = array<i64: 0, 1>, keepdims = true} : (tensor<3x4x70xf32>) -> tensor<1x1x70xf32>
    %2 = graph.reduce mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4x70xf32>) -> tensor<3x70xf32>
    %3 = graph.reduce sum %x {axes = array<i64: 2>, keepdims = false} : (tensor<3x4x70xf32>) -> tensor<3x4xf32>
    %4 = graph.reduce arg_max %x {axes = array<i64: 1>, keepdims = false, select_last_index = true} : (tensor<3x4x70xf32>) -> tensor<3x70xi64>
    return %0, %1, %2, %3, %4 : tensor<70xf32>, tensor<1x1x70xf32>, tensor<3x70xf32>, tensor<3x4xf32>, tensor<3x70xi64>
  }
}
