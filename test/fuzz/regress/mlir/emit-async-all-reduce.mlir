module {
  func.func @kept(%arg0: tensor<256xf32> {emit.buffer = #emit.buffer<arena, offset = 0, bytes = 1024>}, %arg1: tensor<256xf32> {emit.buffer = #emit.buffer<arena, offset = 1024, bytes = 1024>}) -> tensor<256xf32> attributes {emit.memory_plan = #emit.memory_plan<arena = 4224, unshared = 6272>} {
    %0 = emit.kernel  loop(%arg0) attributes {emit.buffers = [#emit.buffer<arena, offset = 0, bytes = 1024>]} : (tensor<256xf32>) -> tensor<256xf32> {
    ^bb0(%arg2: tensor<256xf32>):
      %6 = graph.unary neg %arg2 : (tensor<256xf32>) -> tensor<256xf32>
      emit.yield %6 : tensor<256xf32>
    }
    %1 = dist.all_reduce %0  mean over world {emit.async, emit.buffers = [#emit.buffer<arena, offset = 2048, bytes = 1024>]} : tensor<256xf32>
    %2 = graph.matmul %0, %arg1 {emit.buffers = [#emit.buffer<arena, offset = 4096, bytes = 64>]} : (tensor<256xf32>, tensor<256xf32>) -> tensor<f32>
    %3 = emit.kernel  loop(%arg1) attributes {emit.buffers = [#emit.buffer<arena, offset = 3072, bytes = 1024>]} : (tensor<256xf32>) -> tensor<256xf32> {
    ^bb0(%arg2: tensor<256xf32>):
      %6 = graph.unary exp %arg2 : (tensor<256xf32>) -> tensor<256xf32>
      emit.yield %6 : tensor<256xf32>
    }
    %4 = graph.matmul %3, %3 {emit.buffers = [#emit.buffer<arena, offset = 4160, bytes = 64>]} : (tensor<256xf32>, tensor<256xf32>) -> tensor<f32>
    %5 = emit.kernel  loop(%arg1, %4, %2, %1) attributes {emit.buffers = [#emit.buffer<arena, offset = 1024, bytes = 1024>]} : (tensor<256xf32>, tensor<f32>, tensor<f32>, tensor<256xf32>) -> tensor<256xf32> {
    ^bb0(%arg2: tensor<256xf32>, %arg3: tensor<f32>, %arg4: tensor<f32>, %arg5: tensor<256xf32>):
      %6 = graph.binary mul %arg2, %arg3 : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
      %7 = graph.binary mul %6, %arg4 : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
      %8 = graph.binary add %arg5, %7 : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
      emit.yield %8 : tensor<256xf32>
    }
    return %5 : tensor<256xf32>
  }
}

