// RUN: dist-compile --source-only -o - %s | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && dist-compile %s -o %t/loops.bin
// RUN: %python %S/Inputs/npy.py write %t/x.npy f4 2x4x8x16 0.5 -1 0.25
// RUN: %python %S/Inputs/npy.py write %t/mask.npy f4 2x1x8x16 1 -3 0 0.5 2
// RUN: %t/loops.bin x=%t/x.npy mask=%t/mask.npy -o %t
// RUN: %python %S/Inputs/loops_check.py %t
// RUN: dist-compile --source-only --target=cuda -o - %s | FileCheck %s --check-prefix=CUDA
// Generated elementwise loops on the CPU. An operand read at the output's
// own index: chunks of 4096 items whose item loop is `omp simd` (DG_SIMD).
// An operand read through broadcast index arithmetic (an attention mask of
// one head for four): a loop over rows whose column loop reads it at a row
// offset plus a constant stride, which vectorizes where the divisions of a
// flat index do not. CUDA kernels keep one item per thread.

// CHECK-LABEL: static int run(dg::Program &P) {
// CHECK: if (dg::parallelRows<64, 16>(P, [=] (int64_t lo, int64_t hi) {
// CHECK-NEXT: for (int64_t r = lo; r < hi; ++r) {
// CHECK-NEXT: DG_SIMD
// CHECK-NEXT: for (int64_t j = 0; j < 16; ++j) {
// CHECK-NEXT: const int64_t i = r * 16 + j;
// CHECK-NEXT: const float [[X:t[0-9]+]] = v{{[0-9]+}}[i];
// CHECK-NEXT: const float [[G:t[0-9]+]] = (float)(dg::geluTanh<float>([[X]]));
// CHECK-NEXT: const float [[M:t[0-9]+]] = v{{[0-9]+}}[(((r / 32) * 128 + (r % 8) * 16) + j * 1)];
// CHECK-NEXT: [[S:v[0-9]+]][i] = (float)(([[G]] + [[M]]));
// CHECK: if (dg::parallelChunks<1024>(P, [=] DG_HD (int64_t lo, int64_t hi) {
// CHECK-NEXT: DG_SIMD
// CHECK-NEXT: for (int64_t i = lo; i < hi; ++i) {
// CHECK-NEXT: const float [[T:t[0-9]+]] = [[S]][i];
// CHECK-NEXT: v{{[0-9]+}}[i] = (float)(([[T]] * [[T]]));
// CUDA-NOT: parallelRows
// CUDA: dg::parallelChunks<1024>(P, [=] DG_HD (int64_t lo, int64_t hi)
// CUDA: dg::parallelChunks<1024>(P, [=] DG_HD (int64_t lo, int64_t hi)

module {
  func.func @main(%x: tensor<2x4x8x16xf32> {graph.name = "x"}, %mask: tensor<2x1x8x16xf32> {graph.name = "mask"}) -> (tensor<2x4x8x16xf32> {graph.name = "y"}) {
    %0 = graph.unary gelu_tanh %x : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
    %1 = graph.binary add %0, %mask : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
    %2 = graph.binary mul %1, %1 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
    return %2 : tensor<2x4x8x16xf32>
  }
}
