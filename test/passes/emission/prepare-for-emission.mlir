// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission | FileCheck %s --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="target=cuda" | FileCheck %s --check-prefix=CUDA --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="post-ops=false in-place=false" | FileCheck %s --check-prefix=PLAIN --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="eltwise-kernels=true" | FileCheck %s --check-prefix=ELT --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="channels-last=false views=false" | FileCheck %s --check-prefix=NCHW --enable-var-scope
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

// A residual block: the convolution chain runs channels-last (NHWC), so
// the block input is copied into NHWC once, before the first convolution;
// the second convolution's sum post-op reads that copy (not the NCHW
// input) and writes over it; the returned value is copied back to NCHW.
// With channels-last=false everything stays NCHW and the sum writes over
// the block input itself.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x4x4xf32> {emit.buffer = #emit.buffer<arena, offset = [[XO:[0-9]+]], bytes = 512>}
// CHECK-SAME: emit.memory_plan = #emit.memory_plan<arena = 1024,
// CHECK: %[[XC:.*]] = emit.copy %[[X]] {emit.buffers = [#emit.buffer<arena, offset = [[CO:[0-9]+]], bytes = 512, strides = [128, 1, 32, 8]>]}
// CHECK: %[[C:.*]] = emit.kernel post_ops(%[[XC]], %{{.*}}, %{{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 512, strides = [128, 1, 32, 8]>]}
// CHECK: graph.conv
// CHECK-NEXT: graph.unary relu
// CHECK: %[[R:.*]] = emit.kernel post_ops(%[[C]], %{{.*}}, %{{.*}}, %[[XC]]) attributes {emit.buffers = [#emit.buffer<arena, offset = [[CO]], bytes = 512, strides = [128, 1, 32, 8]>]}
// CHECK: graph.conv
// CHECK-NEXT: graph.binary add
// CHECK-NEXT: graph.unary relu
// CHECK: %[[OUT:.*]] = emit.copy %[[R]] {emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 512>]}
// CHECK: return %[[OUT]]
// NCHW-LABEL: func.func @residual
// NCHW-SAME: (%[[X:.*]]: tensor<1x8x4x4xf32> {emit.buffer = #emit.buffer<arena, offset = [[XO:[0-9]+]], bytes = 512>}
// NCHW-NOT: emit.copy
// NCHW: %[[C:.*]] = emit.kernel post_ops(%[[X]], %{{.*}}, %{{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 512>]}
// NCHW: emit.kernel post_ops(%[[C]], %{{.*}}, %{{.*}}, %[[X]]) attributes {emit.buffers = [#emit.buffer<arena, offset = [[XO]], bytes = 512>]}
// NCHW-NOT: emit.copy
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

// -----

// An exporter's reshape between a matmul and its activation is moved below
// the activation, so the gelu is a post-op and the reshape a view.
// CHECK-LABEL: func.func @sink
// CHECK: %[[K:.*]] = emit.kernel post_ops
// CHECK: graph.matmul
// CHECK-NEXT: %[[G:.*]] = graph.unary gelu_tanh
// CHECK-NEXT: emit.yield %[[G]] : tensor<8x256xf32>
// CHECK: graph.reshape %[[K]] {emit.buffers = [#emit.buffer<view>]} : (tensor<8x256xf32>) -> tensor<2x4x256xf32>
func.func @sink(%x: tensor<8x64xf32>) -> tensor<2x4x256xf32> {
  %w = graph.weight "w" : tensor<64x256xf32>
  %0 = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %1 = graph.reshape %0 : (tensor<8x256xf32>) -> tensor<2x4x256xf32>
  %2 = graph.unary gelu_tanh %1 : (tensor<2x4x256xf32>) -> tensor<2x4x256xf32>
  return %2 : tensor<2x4x256xf32>
}

// -----

// Attention's head merge: the matmul writes [B, H, S, D] in the order the
// transpose to [B, S, H, D] reads it, so the transpose and the reshape
// after it are views with no copy. Without views the transpose is a loop.
// CHECK-LABEL: func.func @heads
// CHECK: %[[M:.*]] = graph.matmul {{.*}}emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 2048, strides = [256, 8, 32, 1]>]
// CHECK: %[[T:.*]] = graph.transpose %[[M]] {emit.buffers = [#emit.buffer<view>]
// CHECK: %[[R:.*]] = graph.reshape %[[T]] {emit.buffers = [#emit.buffer<view>]}
// CHECK: graph.concat %[[R]], %[[R]]
// NCHW-LABEL: func.func @heads
// NCHW: graph.matmul {{.*}}emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 2048>]
// NCHW: graph.transpose {{.*}}emit.buffers = [#emit.buffer<arena
func.func @heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<2x8x64xf32> {
  %0 = graph.matmul %q, %k : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %1 = graph.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x8xf32>) -> tensor<2x8x4x8xf32>
  %2 = graph.reshape %1 : (tensor<2x8x4x8xf32>) -> tensor<2x8x32xf32>
  %3 = graph.concat %2, %2 {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x64xf32>
  return %3 : tensor<2x8x64xf32>
}

// -----

// Squeeze-excitation: a 1x1 convolution of a [N, C, 1, 1] tensor is a
// matmul of [N, C] by its [M, C] weight transposed, which takes the
// convolution's post-ops (oneDNN has no fast convolution for a tensor that
// is both NCHW and NHWC). A 1x1 convolution of a larger image stays one.
// The CUDA target keeps them all.
// CHECK-LABEL: func.func @squeeze
// CHECK: graph.reshape %{{.*}} : (tensor<2x16x1x1xf32>) -> tensor<2x16xf32>
// CHECK: graph.reshape %{{.*}} : (tensor<4x16x1x1xf32>) -> tensor<4x16xf32>
// CHECK: emit.kernel post_ops
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.matmul {{.*}}transpose_rhs = true{{.*}} : (tensor<2x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: graph.unary relu
// CHECK: graph.reshape %{{.*}} : (tensor<2x4xf32>) -> tensor<2x4x1x1xf32>
// CHECK: graph.conv {{.*}} : (tensor<2x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x4x4xf32>
// CUDA-LABEL: func.func @squeeze
// CUDA-NOT: graph.matmul
// CUDA: graph.conv
// CUDA: graph.conv
func.func @squeeze(%s: tensor<2x16x1x1xf32>, %img: tensor<2x4x4x4xf32>) -> (tensor<2x4x1x1xf32>, tensor<2x4x4x4xf32>) {
  %w = graph.weight "w" : tensor<4x16x1x1xf32>
  %b = graph.weight "b" : tensor<4xf32>
  %w2 = graph.weight "w2" : tensor<4x4x1x1xf32>
  %0 = graph.conv %s, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x16x1x1xf32>, tensor<4x16x1x1xf32>, tensor<4xf32>) -> tensor<2x4x1x1xf32>
  %1 = graph.unary relu %0 : (tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
  %2 = graph.conv %img, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x4x4xf32>
  return %1, %2 : tensor<2x4x1x1xf32>, tensor<2x4x4x4xf32>
}

// -----

// A function another function calls (a pipeline stage called by an action
// list) reads its arguments where the caller holds them (`argument`: no
// slot, no copy) and computes a value it returns once straight into the
// caller's buffer (`result`). Nothing writes over an argument: the add of
// %h after the matmul is a binary post-op, not oneDNN's in-place sum. A
// value returned twice keeps an arena slot (it is copied out twice); the
// caller's own inputs and call results are arena slots.
// CHECK-LABEL: func.func private @stage
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32> {emit.buffer = #emit.buffer<argument>}, %{{.*}}: tensor<8x8xf32> {emit.buffer = #emit.buffer<argument>})
// CHECK: emit.kernel post_ops{{.*}}{emit.buffers = [#emit.buffer<result>]}
// CHECK: emit.kernel loop{{.*}}{emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 128>]}
// CHECK: return
// CHECK-LABEL: func.func @caller
// CHECK-SAME: emit.buffer = #emit.buffer<arena
// CHECK: call @stage({{.*}}) {emit.buffers = [#emit.buffer<arena, {{.*}}>, #emit.buffer<arena, {{.*}}>, #emit.buffer<arena
func.func private @stage(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %m = graph.matmul %h, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = graph.binary add %m, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = graph.unary tanh %h : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y, %t, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @caller(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y:3 = call @stage(%h, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %y#0 : tensor<4x8xf32>
}

// -----

// A 1-D convolution (Whisper's front end) takes its GELU as a post-op and
// runs channels-last (NWC: its input copied once), so the transpose to
// [N, L, C] after it is a row-major view, no copy. With
// channels-last=false it stays NCW.
// CHECK-LABEL: func.func @conv1d
// CHECK: %[[XC:.*]] = emit.copy %{{.*}} {emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 256, strides = [30, 1, 3]>]}
// CHECK: %[[C:.*]] = emit.kernel post_ops(%[[XC]], %{{.*}}, %{{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 320, strides = [40, 1, 4]>]}
// CHECK: graph.conv
// CHECK-NEXT: graph.unary gelu
// CHECK: %[[T:.*]] = graph.transpose %[[C]] {emit.buffers = [#emit.buffer<view>]
// CHECK-NEXT: return %[[T]]
// NCHW-LABEL: func.func @conv1d
// NCHW-NOT: emit.copy
// NCHW: emit.kernel post_ops(%{{.*}}, %{{.*}}, %{{.*}}) attributes {emit.buffers = [#emit.buffer<arena, offset = {{[0-9]+}}, bytes = 320>]}
func.func @conv1d(%x: tensor<2x3x10xf32>) -> tensor<2x10x4xf32> {
  %w = graph.weight "w" : tensor<4x3x3xf32>
  %b = graph.weight "b" : tensor<4xf32>
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1>} : (tensor<2x3x10xf32>, tensor<4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x10xf32>
  %1 = graph.unary gelu %0 : (tensor<2x4x10xf32>) -> tensor<2x4x10xf32>
  %2 = graph.transpose %1 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x10xf32>) -> tensor<2x10x4xf32>
  return %2 : tensor<2x10x4xf32>
}
