// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission | FileCheck %s --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission="async-collectives=false" | FileCheck %s --check-prefix=SYNC --enable-var-scope
// Round trip: emit.async parses and verifies again.
// RUN: dist-opt %s -split-input-file --dist-prepare-for-emission | dist-opt -split-input-file | FileCheck %s --enable-var-scope

// A gradient reduced where it is made and read three ops later: the
// all-reduce is started there (emit.async) and reduces in place over the
// gradient, which dies there; that slot lives until the wait, so the exp
// loop between does not write over it.
// CHECK-LABEL: func.func @grads
// CHECK: %[[G:.*]] = emit.kernel loop(%arg0) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
// CHECK: dist.all_reduce %[[G]] mean over world {emit.async, emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
// CHECK: emit.kernel loop(%arg1) attributes {emit.buffers = [#emit.buffer<arena, offset = 2048, bytes = 1024>]}
// SYNC-LABEL: func.func @grads
// SYNC: dist.all_reduce %{{.*}} mean over world {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
func.func @grads(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
  %g = graph.unary neg %x : (tensor<256xf32>) -> tensor<256xf32>
  %r = dist.all_reduce %g mean over world : tensor<256xf32>
  %a = graph.unary exp %y : (tensor<256xf32>) -> tensor<256xf32>
  %m = graph.matmul %a, %a : (tensor<256xf32>, tensor<256xf32>) -> tensor<f32>
  %b = graph.binary mul %y, %m : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %s = graph.binary add %r, %b : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %s : tensor<256xf32>
}

// -----

// The gradient is read once more after the start (by a matmul), so the
// all-reduce writes a slot of its own and reads the gradient until the
// wait: the exp loop after that matmul does not reuse the gradient's slot
// (it does without the overlap).
// CHECK-LABEL: func.func @kept
// CHECK: %[[G:.*]] = emit.kernel loop(%arg0) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
// CHECK: dist.all_reduce %[[G]] mean over world {emit.async, emit.buffers = [#emit.buffer<arena, offset = 2048, bytes = 1024>]}
// CHECK: graph.matmul %[[G]], %arg1
// CHECK: emit.kernel loop(%arg1) attributes {emit.buffers = [#emit.buffer<arena, offset = 3072, bytes = 1024>]}
// SYNC-LABEL: func.func @kept
// SYNC: emit.kernel loop(%arg1) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
func.func @kept(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
  %g = graph.unary neg %x : (tensor<256xf32>) -> tensor<256xf32>
  %r = dist.all_reduce %g mean over world : tensor<256xf32>
  %h = graph.matmul %g, %y : (tensor<256xf32>, tensor<256xf32>) -> tensor<f32>
  %a = graph.unary exp %y : (tensor<256xf32>) -> tensor<256xf32>
  %m = graph.matmul %a, %a : (tensor<256xf32>, tensor<256xf32>) -> tensor<f32>
  %b = graph.binary mul %y, %m : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %c = graph.binary mul %b, %h : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %s = graph.binary add %r, %c : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %s : tensor<256xf32>
}

// -----

// Read by the next op: nothing to overlap, a blocking all-reduce (in place
// over the gradient, which dies there).
// CHECK-LABEL: func.func @next
// CHECK: %[[G:.*]] = emit.kernel loop(%arg0) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
// CHECK: dist.all_reduce %[[G]] mean over world {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
func.func @next(%x: tensor<256xf32>) -> tensor<256xf32> {
  %g = graph.unary neg %x : (tensor<256xf32>) -> tensor<256xf32>
  %r = dist.all_reduce %g mean over world : tensor<256xf32>
  %s = graph.unary exp %r : (tensor<256xf32>) -> tensor<256xf32>
  return %s : tensor<256xf32>
}

// -----

// In a called function (a pipeline stage) a returned all-reduce computes
// into the caller's buffer (`result`), so it cannot write over the
// gradient: the gradient's slot lives until the wait before the return, and
// the exp loop gets another one.
// CHECK-LABEL: func.func @stage
// CHECK: %[[G:.*]] = emit.kernel loop(%arg0) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]}
// CHECK: dist.all_reduce %[[G]] mean over world {emit.async, emit.buffers = [#emit.buffer<result>]}
// CHECK: emit.kernel loop(%arg1) attributes {emit.buffers = [#emit.buffer<arena, offset = 1024, bytes = 1024>]}
func.func @stage(%x: tensor<256xf32>, %y: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %g = graph.unary neg %x : (tensor<256xf32>) -> tensor<256xf32>
  %r = dist.all_reduce %g mean over world : tensor<256xf32>
  %a = graph.unary exp %y : (tensor<256xf32>) -> tensor<256xf32>
  %m = graph.matmul %a, %a : (tensor<256xf32>, tensor<256xf32>) -> tensor<f32>
  %b = graph.binary mul %y, %m : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  return %r, %b : tensor<256xf32>, tensor<256xf32>
}
func.func @caller(%x: tensor<256xf32>, %y: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %0:2 = func.call @stage(%x, %y) : (tensor<256xf32>, tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>)
  return %0#0, %0#1 : tensor<256xf32>, tensor<256xf32>
}
