// RUN: dist-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{unknown buffer kind 'heap'; expected arena, view, resident, argument or result}}
func.func @f() attributes {x = #emit.buffer<heap>}

// -----

// expected-error @+1 {{arena offset 8 must be a non-negative multiple of 64}}
func.func @f() attributes {x = #emit.buffer<arena, offset = 8, bytes = 64>}

// -----

// expected-error @+1 {{a view owns no bytes (got bytes = 64)}}
func.func @f() attributes {x = #emit.buffer<view, bytes = 64>}

// -----

// expected-error @+1 {{a resident buffer is row-major and takes no offset or bytes}}
func.func @f() attributes {x = #emit.buffer<resident, offset = 64>}

// -----

// expected-error @+1 {{unknown #emit.buffer field 'size'; expected offset, bytes or strides}}
func.func @f() attributes {x = #emit.buffer<arena, size = 64>}

// -----

// expected-error @+1 {{memory plan sizes must be non-negative}}
func.func @f() attributes {x = #emit.memory_plan<arena = -1, unshared = 0>}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{emit.buffers must list one #emit.buffer per result (1)}}
  %0 = graph.unary neg %x {emit.buffers = []} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #0 needs an arena or argument emit.buffer; run dist-prepare-for-emission}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 64, unshared = 64>} {
  return %x : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 64>}) -> tensor<4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>} {
  // expected-error @+1 {{needs emit.buffers with one entry per result (1) in a body with emit.memory_plan; run dist-prepare-for-emission}}
  %0 = graph.unary neg %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 64>}) -> tensor<4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 64, unshared = 128>} {
  // expected-error @+1 {{result #0 of 'graph.unary' has arena bytes [64, 128) outside the arena of 64 bytes}}
  %0 = graph.unary neg %x {emit.buffers = [#emit.buffer<arena, offset = 64, bytes = 64>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 64>}) -> (tensor<4xf32>, tensor<4xf32>) attributes {emit.memory_plan = #emit.memory_plan<arena = 64, unshared = 128>} {
  // The input is returned (live to the end): the result may not share it.
  // expected-error @+1 {{result #0 of 'emit.kernel' (live from op 0 to 2) shares arena bytes [0, 64) with argument #0 (live from op -1 to 2)}}
  %0 = emit.kernel loop(%x) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 64>]} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
    emit.yield %n : tensor<4xf32>
  }
  return %0, %x : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 64>}, %y: tensor<4xf32> {emit.buffer = #emit.buffer<arena, offset = 64, bytes = 64>}) -> tensor<4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 192>} {
  // softmax is no kernel that may write in place.
  // expected-error @+1 {{result #0 of 'graph.softmax' (live from op 0 to 1) shares arena bytes [0, 64) with argument #0 (live from op -1 to 0)}}
  %0 = graph.softmax %x {axis = 0 : i64, emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 64>]} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.binary add %0, %y {emit.buffers = [#emit.buffer<arena, offset = 64, bytes = 64>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 64>}) -> tensor<4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>} {
  // expected-error @+1 {{only graph.weight, graph.constant and graph.state results can be resident}}
  %0 = graph.unary neg %x {emit.buffers = [#emit.buffer<resident>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 128>}) -> tensor<8x4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>} {
  // expected-error @+1 {{view result #0 is recorded at offset 0 but the op reads its operand at offset 0 with other strides}}
  %0 = graph.transpose %x {perm = array<i64: 1, 0>, emit.buffers = [#emit.buffer<view>]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// The memory plan's verifier runs before the body's ops: a view's own
// invariants are checked first (dist-fuzz: perm 65536 read past the
// strides and crashed).
func.func @f(%x: tensor<4x8xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 128>}) -> tensor<8x4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>} {
  // expected-error @+1 {{'perm' is not a permutation of [0, 2)}}
  %0 = graph.transpose %x {perm = array<i64: 1, 65536>, emit.buffers = [#emit.buffer<view>]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 128>}) -> tensor<4x4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>} {
  // expected-error @+1 {{'graph.slice' op}}
  %0 = graph.slice %x {axes = array<i64: 7>, starts = array<i64: 0>, ends = array<i64: 4>, emit.buffers = [#emit.buffer<view>]} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 128>}) -> tensor<4x8xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 256, unshared = 256>} {
  // expected-error @+1 {{cannot be a view of its operand}}
  %0 = graph.softmax %x {axis = 1 : i64, emit.buffers = [#emit.buffer<view>]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 128>}) -> tensor<4x8xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 256, unshared = 256>} {
  // expected-error @+1 {{arena slot of result #0 holds 64 bytes but 'tensor<4x8xf32>' needs 128}}
  %0 = graph.softmax %x {axis = 1 : i64, emit.buffers = [#emit.buffer<arena, offset = 128, bytes = 64>]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 128>}) -> tensor<4x8xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 256, unshared = 256>} {
  // expected-error @+1 {{emit.buffers[0] has 1 strides for a rank-2 result}}
  %0 = graph.softmax %x {axis = 1 : i64, emit.buffers = [#emit.buffer<arena, offset = 128, bytes = 128, strides = [1]>]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{emit.compute_type = f32 widens 16-bit tensors, but this op has none}}
  %0 = graph.softmax %x {axis = 0 : i64, emit.compute_type = f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{emit.compute_type must be f32 (the type the runtime's kernels compute in)}}
  %0 = graph.softmax %x {axis = 0 : i64, emit.compute_type = f16} : (tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown emit dialect attribute 'emit.fused'}}
  %0 = graph.unary neg %x {emit.fused} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #0: emit.buffer on a function argument must be an arena or argument #emit.buffer}}
func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<resident>}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{an argument buffer is row-major and takes no offset or bytes}}
func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<argument, offset = 64>}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<argument>}) -> tensor<4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 64, unshared = 64>} {
  // expected-error @+1 {{emit.buffers[0] is an argument buffer; only a function's arguments are}}
  %0 = graph.unary neg %x {emit.buffers = [#emit.buffer<argument>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<argument>}) -> (tensor<4xf32>, tensor<4xf32>) attributes {emit.memory_plan = #emit.memory_plan<arena = 64, unshared = 64>} {
  // expected-error @+1 {{emit.buffers[0] is a result buffer, but the result is not returned exactly once by its function}}
  %0 = graph.unary neg %x {emit.buffers = [#emit.buffer<result>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yields 'tensor<4xf16>' but the kernel's result is 'tensor<4xf32>'}}
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = graph.cast %a : (tensor<4xf32>) -> tensor<4xf16>
    emit.yield %c : tensor<4xf16>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{must yield a value its body computes}}
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    emit.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body argument #0 has type 'tensor<4xf16>' but input is 'tensor<4xf32>'}}
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf16>):
    %c = graph.cast %a : (tensor<4xf16>) -> tensor<4xf32>
    emit.yield %c : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{is not elementwise; a loop kernel holds only graph.unary, binary, where, cast, clip and unary_grad}}
    %s = graph.softmax %a {axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    emit.yield %s : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{is fused into a loop kernel but its result has more than one use}}
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
    %m = graph.binary mul %n, %n : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    emit.yield %m : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{post_ops kernel must start with an f32 graph.matmul or 1-D or 2-D graph.conv}}
  %0 = emit.kernel post_ops(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.unary relu %a : (tensor<4xf32>) -> tensor<4xf32>
    emit.yield %n : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A 3-D convolution has no oneDNN lowering here (1-D runs as 2-D).
func.func @f(%x: tensor<1x2x4x4x4xf32>, %w: tensor<2x2x1x1x1xf32>) -> tensor<1x2x4x4x4xf32> {
  // expected-error @+1 {{post_ops kernel must start with an f32 graph.matmul or 1-D or 2-D graph.conv}}
  %0 = emit.kernel post_ops(%x, %w) : (tensor<1x2x4x4x4xf32>, tensor<2x2x1x1x1xf32>) -> tensor<1x2x4x4x4xf32> {
  ^bb0(%a: tensor<1x2x4x4x4xf32>, %b: tensor<2x2x1x1x1xf32>):
    %c = graph.conv %a, %b {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x4x4x4xf32>, tensor<2x2x1x1x1xf32>) -> tensor<1x2x4x4x4xf32>
    %n = graph.unary relu %c : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x4x4x4xf32>
    emit.yield %n : tensor<1x2x4x4x4xf32>
  }
  return %0 : tensor<1x2x4x4x4xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = emit.kernel post_ops(%x, %w, %b) : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %k: tensor<8x8xf32>, %c: tensor<4x1xf32>):
    %m = graph.matmul %a, %k : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    // A per-row operand has no post-op form (per-column, scalar or full only).
    // expected-error @+1 {{has no oneDNN post-op form after graph.matmul (an activation, or a binary op with a scalar, per-channel or full-shape operand)}}
    %s = graph.binary add %m, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    emit.yield %s : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{eltwise kernel holds one f32 graph.unary of a kind the runtime's eltwise kernel computes}}
  %0 = emit.kernel eltwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
    emit.yield %n : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Only an all-reduce has a started form in the runtime.
func.func @async_not_a_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{emit.async is a unit attribute of dist.all_reduce}}
  %s = graph.unary exp %x {emit.async} : (tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}
