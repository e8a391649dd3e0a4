// RUN: dist-opt %s | FileCheck %s
// RUN: dist-opt %s | dist-opt | FileCheck %s
// The emit dialect's attributes and ops print and parse back.

// CHECK-LABEL: func.func @planned
// CHECK-SAME: {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 256>}
// CHECK-SAME: emit.memory_plan = #emit.memory_plan<arena = 512, unshared = 768>
// CHECK: graph.weight "w" {emit.buffers = [#emit.buffer<resident>]}
// CHECK: emit.kernel loop(%{{.*}}, %{{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = 256, bytes = 256>]}
// CHECK: graph.transpose {{.*}}emit.buffers = [#emit.buffer<view, strides = [1, 16]>]
// CHECK: emit.copy %{{.*}} {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 256>]} : tensor<16x4xf32>
func.func @planned(%x: tensor<4x16xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 256>}) -> tensor<16x4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 512, unshared = 768>} {
  %w = graph.weight "w" {emit.buffers = [#emit.buffer<resident>]} : tensor<16xf32>
  %0 = emit.kernel loop(%x, %w) attributes {emit.buffers = [#emit.buffer<arena, offset = 256, bytes = 256>]} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>, %b: tensor<16xf32>):
    %s = graph.binary add %a, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    emit.yield %s : tensor<4x16xf32>
  }
  %1 = graph.transpose %0 {perm = array<i64: 1, 0>, emit.buffers = [#emit.buffer<view, strides = [1, 16]>]} : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %2 = emit.copy %1 {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 256>]} : tensor<16x4xf32>
  return %2 : tensor<16x4xf32>
}
