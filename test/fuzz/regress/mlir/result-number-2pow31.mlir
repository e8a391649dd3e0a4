


func.func @unscale_scale(%s: tensor<1xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'scale' must be a tensor<f32> scalar}}
  %0:2 = graph.unscale %s, %g : (tensor<1xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<i1>)
  return %0#2147483648 : tensor<4xf32>
}
  %0:2 = graph.unscale %s, %g : (tensor<1xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<i1>)

