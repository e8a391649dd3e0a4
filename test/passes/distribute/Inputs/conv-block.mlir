// A convolution block: a column stem with batch norm and relu, a depthwise
// convolution, a row 1x1 convolution, a residual add of whole and split
// values, a column convolution, global pooling and a row-parallel
// classifier.
func.func @main(%x: tensor<2x4x8x8xf32> {graph.name = "x"}) -> (tensor<2x10xf32> {graph.name = "y"}) {
  %w0 = graph.weight "stem.w" : tensor<8x4x3x3xf32>
  %b0 = graph.weight "stem.b" : tensor<8xf32>
  %s0 = graph.weight "stem.bn.s" : tensor<8xf32>
  %t0 = graph.weight "stem.bn.b" : tensor<8xf32>
  %m0 = graph.weight "stem.bn.m" : tensor<8xf32>
  %v0 = graph.weight "stem.bn.v" : tensor<8xf32>
  %wd = graph.weight "dw.w" : tensor<8x1x3x3xf32>
  %w1 = graph.weight "pw.w" : tensor<8x8x1x1xf32>
  %b1 = graph.weight "pw.b" : tensor<8xf32>
  %w2 = graph.weight "c2.w" : tensor<8x8x3x3xf32>
  %s2 = graph.weight "c2.bn.s" : tensor<8xf32>
  %t2 = graph.weight "c2.bn.b" : tensor<8xf32>
  %m2 = graph.weight "c2.bn.m" : tensor<8xf32>
  %v2 = graph.weight "c2.bn.v" : tensor<8xf32>
  %wf = graph.weight "fc.w" : tensor<8x10xf32>
  %bf = graph.weight "fc.b" : tensor<10xf32>
  %a = graph.conv %x, %w0, %b0 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %an = graph.batch_norm %a, %s0, %t0, %m0, %v0 : (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %ar = graph.unary relu %an : (tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %d = graph.conv %ar, %wd {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x8x8xf32>
  %r = graph.conv %d, %w1, %b1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x8x8x8xf32>, tensor<8x8x1x1xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %s = graph.binary add %r, %ar : (tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %c = graph.conv %s, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x8x8xf32>
  %cn = graph.batch_norm %c, %s2, %t2, %m2, %v2 : (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %cr = graph.unary relu %cn : (tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %p = graph.pool avg %cr {global} : (tensor<2x8x8x8xf32>) -> tensor<2x8x1x1xf32>
  %f = graph.flatten %p {axis = 1 : i64} : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32>
  %y = graph.matmul %f, %wf, %bf : (tensor<2x8xf32>, tensor<8x10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  return %y : tensor<2x10xf32>
}
