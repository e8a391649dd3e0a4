// A model whose loss depends on the weights through an op with no gradient
// (node-names.test).
func.func @main(%x: tensor<1x4xf32> {graph.name = "x"}) -> (tensor<f32> {graph.name = "loss"}) {
  %w = graph.weight "w" : tensor<1x4xf32> loc("w")
  %a = graph.binary mul %x, %w : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("/model/mul")
  %b = graph.opaque "Hardmax"(%a) : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("/model/decoder/Hardmax")
  %s = graph.reduce sum %b {keepdims = false} : (tensor<1x4xf32>) -> tensor<f32> loc("/model/sum")
  return %s : tensor<f32>
}
