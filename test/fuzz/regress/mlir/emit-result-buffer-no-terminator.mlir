func.func @f(%x: tensor<4xf32> {emit.buffer = #emit.buffer<argument>}) -> tensor<4xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 64, unshared = 64>} {
  %0 = graph.unary neg %x {emit.buffers = [#emit.buffer<result>]} : (tensor<4xf32>) -> tensor<4xf32>
}
