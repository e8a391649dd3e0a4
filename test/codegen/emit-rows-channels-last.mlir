// RUN: dist-compile --source-only -o - %s | FileCheck %s
// RUN: dist-compile --source-only --target=cuda -o - %s | FileCheck %s --check-prefix=CUDA
// A broadcast operand of a generated loop whose output is channels-last
// (the squeeze-excitation scale of a convolution chain): the loop runs over
// the rows and columns of the output's memory, [N*H*W, C], and reads the
// [N, C, 1, 1] scale at a row offset plus the column, which vectorizes; it
// was a flat loop with a division and a remainder per element (1.2 ns an
// element in EfficientNet-B0). The numerical suite runs the same chain
// against onnxruntime (run_networks.py, channels_last_chain).

// CHECK-LABEL: static int run(dg::Program &P) {
// CHECK: // emit.kernel at {{.*}}emit-rows-channels-last.mlir:32:10
// CHECK-NEXT: float *[[OUT:v[0-9]+]] = (float *)(arena + {{[0-9]+}});
// CHECK-NEXT: if (dg::parallelRows<288, 16>(P, [=] (int64_t lo, int64_t hi) {
// CHECK-NEXT: for (int64_t r = lo; r < hi; ++r) {
// CHECK-NEXT: DG_SIMD
// CHECK-NEXT: for (int64_t j = 0; j < 16; ++j) {
// CHECK-NEXT: const int64_t i = r * 16 + j;
// CHECK-NEXT: const float [[X:t[0-9]+]] = v{{[0-9]+}}[i];
// CHECK-NEXT: const float [[S:t[0-9]+]] = v{{[0-9]+}}[(((r / 144) * 16) + j * 1)];
// CHECK-NEXT: [[OUT]][i] = (float)(([[X]] * [[S]]));
// CUDA-NOT: parallelRows
module {
  func.func @main(%arg0: tensor<2x3x12x12xf32> {graph.name = "x"}) -> (tensor<2x8x12x12xf32> {graph.name = "y"}) {
    %0 = graph.weight "w1" : tensor<16x3x3x3xf32>
    %1 = graph.weight "w2" : tensor<16x16x3x3xf32>
    %2 = graph.weight "w3" : tensor<8x16x1x1xf32>
    %3 = graph.conv %arg0, %0 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x12x12xf32>, tensor<16x3x3x3xf32>) -> tensor<2x16x12x12xf32>
    %4 = graph.unary relu %3 : (tensor<2x16x12x12xf32>) -> tensor<2x16x12x12xf32>
    %5 = graph.pool avg %4 {global} : (tensor<2x16x12x12xf32>) -> tensor<2x16x1x1xf32>
    %6 = graph.unary sigmoid %5 : (tensor<2x16x1x1xf32>) -> tensor<2x16x1x1xf32>
    %7 = graph.binary mul %4, %6 : (tensor<2x16x12x12xf32>, tensor<2x16x1x1xf32>) -> tensor<2x16x12x12xf32>
    %8 = graph.conv %7, %1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x12x12xf32>
    %9 = graph.conv %8, %2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x16x12x12xf32>, tensor<8x16x1x1xf32>) -> tensor<2x8x12x12xf32>
    return %9 : tensor<2x8x12x12xf32>
  }
}
