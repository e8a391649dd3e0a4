// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission | FileCheck %s --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="target=cuda" | FileCheck %s --check-prefix=CUDA --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="post-ops=false in-place=false" | FileCheck %s --check-prefix=PLAIN --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="eltwise-kernels=true" | FileCheck %s --check-prefix=ELT --enable-var-scope
// Round trip: the recorded plan parses and verifies again.
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission | dist-opt -split-input-file | FileCheck %s --enable-var-scope

// A linear layer: matmul + bias + gelu become one post_ops kernel on the
// CPU (a plain matmul and one fused loop on CUDA); weights are resident,
// the input and the result get arena slots, the reshape is a view.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32> {emit.buffer = #emit.buffer<arena, offset = 8192, bytes = 2048>})
// CHECK-SAME: emit.memory_plan = #emit.memory_plan<arena = 10240, unshared = 10240>
// CHECK: %[[W:.*]] = graph.weight "w" {emit.buffers = [#emit.buffer<resident>]
// CHECK: %[[B:.*]] = graph.weight "b" {emit.buffers = [#emit.buffer<resident>]
// CHECK: %[[K:.*]] = emit.kernel post_ops(%[[X]], %[[W]], %[[B]]) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 8192>]}
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<8x64xf32>, %[[A1:.*]]: tensor<64x256xf32>, %[[A2:.*]]: tensor<256xf32>):
// CHECK-NEXT: %[[M:.*]] = graph.matmul %[[A0]], %[[A1]]
// CHECK-NEXT: %[[S:.*]] = graph.binary add %[[M]], %[[A2]]
// CHECK-NEXT: %[[G:.*]] = graph.unary gelu_tanh %[[S]]
// CHECK-NEXT: emit.yield %[[G]]
// CHECK: graph.reshape %[[K]] {emit.buffers = [#emit.buffer<view>]}
// CUDA-LABEL: func.func @mlp
// CUDA: graph.matmul %{{.*}} {emit.buffers = [#emit.buffer<arena
// CUDA: emit.kernel loop
// CUDA-NEXT: ^bb0
// CUDA-NEXT: graph.binary add
// CUDA-NEXT: graph.unary gelu_tanh
func.func @mlp(%x: tensor<8x64xf32>) -> tensor<2048xf32> {
  %w = graph.weight "w" : tensor<64x256xf32>
  %b = graph.weight "b" : tensor<256xf32>
  %0 = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %1 = graph.binary add %0, %b : (tensor<8x256xf32>, tensor<256xf32>) -> tensor<8x256xf32>
  %2 = graph.unary gelu_tanh %1 : (tensor<8x256xf32>) -> tensor<8x256xf32>
  %3 = graph.reshape %2 : (tensor<8x256xf32>) -> tensor<2048xf32>
  return %3 : tensor<2048xf32>
}

// -----

// Elementwise ops fuse into their single user's loop; a value with two
// uses is stored. Each loop writes its result over the input it reads last
// (in place: everything shares one slot). Without in-place, the exp needs
// its own slot and the second loop reuses the dead input's. A lone exp
// stays a loop unless eltwise-kernels is on.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 256>})
// CHECK-SAME: emit.memory_plan = #emit.memory_plan<arena = 256, unshared = 768>
// CHECK: %[[E:.*]] = emit.kernel loop(%[[X]]) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 256>]}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.unary exp
// CHECK-NEXT: emit.yield
// CHECK: emit.kernel loop(%[[E]]) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 256>]}
// CHECK-NEXT: ^bb0(%[[P:.*]]: tensor<4x16xf32>):
// CHECK-NEXT: %[[N:.*]] = graph.unary neg %[[P]]
// CHECK-NEXT: %[[T:.*]] = graph.binary mul %[[N]], %[[P]]
// CHECK-NEXT: graph.unary relu %[[T]]
// PLAIN-LABEL: func.func @chain
// PLAIN-SAME: (%{{.*}}: tensor<4x16xf32> {emit.buffer = #emit.buffer<arena, offset = [[A:[0-9]+]], bytes = 256>})
// PLAIN-SAME: emit.memory_plan = #emit.memory_plan<arena = 512, unshared = 768>
// PLAIN: emit.kernel loop({{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = [[B:[0-9]+]], bytes = 256>]}
// PLAIN: emit.kernel loop({{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = [[A]], bytes = 256>]}
// ELT-LABEL: func.func @chain
// ELT: emit.kernel eltwise
// ELT-NEXT: ^bb0
// ELT-NEXT: graph.unary exp
func.func @chain(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = graph.unary exp %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = graph.unary neg %e : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = graph.binary mul %n, %e : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = graph.unary relu %m : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// A residual block: the convolution's first post-op adds the block input
// (oneDNN's sum), so its result is written over that input's slot.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x4x4xf32> {emit.buffer = #emit.buffer<arena, offset = [[XO:[0-9]+]], bytes = 512>}
// CHECK: %[[C:.*]] = emit.kernel post_ops(%[[X]], %{{.*}}, %{{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 512>]}
// CHECK: graph.conv
// CHECK-NEXT: graph.unary relu
// CHECK: emit.kernel post_ops(%[[C]], %{{.*}}, %{{.*}}, %[[X]]) attributes {emit.buffers = [#emit.buffer<arena, offset = [[XO]], bytes = 512>]}
// CHECK: graph.conv
// CHECK-NEXT: graph.binary add
// CHECK-NEXT: graph.unary relu
func.func @residual(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.weight "w" : tensor<8x8x3x3xf32>
  %b = graph.weight "b" : tensor<8xf32>
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %1 = graph.unary relu %0 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %2 = graph.conv %1, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %3 = graph.binary add %2, %x : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %4 = graph.unary relu %3 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %4 : tensor<1x8x4x4xf32>
}

// -----

// Precision: softmax's kernel computes in f32, so its f16 tensors are
// widened; the f16 matmul runs in f16 itself.
// CHECK-LABEL: func.func @half
// CHECK: graph.matmul {{.*}} {emit.buffers = [#emit.buffer<arena
// CHECK-NOT: emit.compute_type
// CHECK: graph.softmax {{.*}}emit.compute_type = f32
func.func @half(%a: tensor<4x8xf16>, %b: tensor<8x8xf16>) -> tensor<4x8xf16> {
  %0 = graph.matmul %a, %b : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
  %1 = graph.softmax %0 {axis = 1 : i64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  return %1 : tensor<4x8xf16>
}

// -----

// Pipeline stages: each stage body gets its own plan; the function none.
// CHECK-LABEL: func.func @staged
// CHECK-NOT: emit.memory_plan
// CHECK: dist.stage 0 {{.*}} attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>}
// CHECK: emit.kernel loop
// CHECK: dist.stage 1 {{.*}} attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>}
func.func @staged(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = graph.unary relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    dist.yield %r : tensor<4x8xf32>
  }
  %1 = dist.stage 1 on #dist.mesh<shape = [1], devices = [1]> (%0) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = graph.unary neg %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    dist.yield %r : tensor<4x8xf32>
  }
  return %1 : tensor<4x8xf32>
}
