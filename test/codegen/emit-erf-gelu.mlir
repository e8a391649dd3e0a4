// RUN: dist-compile --source-only -o - %s | FileCheck %s
// RUN: dist-compile --source-only -o - --target=cuda %s | FileCheck %s --check-prefix=CUDA
// erf and exact GELU in a generated loop call the float paths of
// distrt/gen/Scalar.h (dg::erfOf, dg::gelu), which GCC inlines and
// vectorizes; libm's erff is a call per element. Their accuracy is held
// to double-precision erf by test/unit/codegen/ScalarMathTest.cpp.

// CHECK-LABEL: static int run(dg::Program &P) {
// CHECK: DG_SIMD
// CHECK: const float [[X:t[0-9]+]] = v{{[0-9]+}}[i];
// CHECK-NEXT: const float [[E:t[0-9]+]] = (float)(dg::erfOf<float>([[X]]));
// CHECK-NEXT: const float [[S:t[0-9]+]] = (float)(([[E]] + [[X]]));
// CHECK-NEXT: v{{[0-9]+}}[i] = (float)(dg::gelu<float>([[S]]));
// CHECK-NOT: erff(
// CUDA: dg::erfOf<float>(
// CUDA: dg::gelu<float>(

module {
  func.func @main(%x: tensor<2x64xf32> {graph.name = "x"}) -> (tensor<2x64xf32> {graph.name = "y"}) {
    %0 = graph.unary erf %x : (tensor<2x64xf32>) -> tensor<2x64xf32>
    %1 = graph.binary add %0, %x : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
    %2 = graph.unary gelu %1 : (tensor<2x64xf32>) -> tensor<2x64xf32>
    return %2 : tensor<2x64xf32>
  }
}
