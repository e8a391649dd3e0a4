// RUN: dist-compile --source-only -o - %s | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && dist-compile %s -o %t/rows.bin
// RUN: %python %S/Inputs/npy.py write %t/x.npy f4 2x1x4x16 0.5 -1 0.25 3 -2
// RUN: %t/rows.bin x=%t/x.npy -o %t
// RUN: %python %S/Inputs/rows_check.py %t
// Data movement by rows on the CPU: a broadcast copy (expand, GQA's
// repeated KV heads) and a concatenation along the last axis
// (rotate-half) loop over rows, and their column loops read and write at a
// row offset plus the column, which vectorizes.

// CHECK-LABEL: static int run(dg::Program &P) {
// CHECK: if (dg::parallelRows<24, 16>(P, [=] (int64_t lo, int64_t hi) {
// CHECK: [[E:v[0-9]+]][i] = [[X:v[0-9]+]][(((r / 12) * 64 + (r % 4) * 16) + j * 1)];
// CHECK: if (dg::parallelRows<24, 16>(P, [=] (int64_t lo, int64_t hi) {
// CHECK: [[C:v[0-9]+]][r * 32 + 0 + j] = [[E]][i];
// CHECK: if (dg::parallelRows<24, 16>(P, [=] (int64_t lo, int64_t hi) {
// CHECK: [[C]][r * 32 + 16 + j] = [[E]][i];

module {
  func.func @main(%x: tensor<2x1x4x16xf32> {graph.name = "x"}) -> (tensor<2x3x4x32xf32> {graph.name = "y"}) {
    %0 = graph.expand %x : (tensor<2x1x4x16xf32>) -> tensor<2x3x4x16xf32>
    %1 = graph.concat %0, %0 {axis = 3 : i64} : (tensor<2x3x4x16xf32>, tensor<2x3x4x16xf32>) -> tensor<2x3x4x32xf32>
    return %1 : tensor<2x3x4x32xf32>
  }
}
