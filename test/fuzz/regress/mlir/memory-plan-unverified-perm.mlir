

func.func @f(%x: tensor<4x8xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 128>}) -> tensor<8x4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 128, unshared = 128>} {
  // expected-error @+1 {{view result #0 is recorded at offset 0 but the op reads its operand at offset 0 with other strides}}
  %0 = graph.transpose %x {perm = array<i64: 1, 65536>, emit.buffers = [#emit.buffer<view>]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

