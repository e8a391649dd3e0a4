    %m = graph.binary mul %n, %n : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {

    // expected-error @+1 {{is fused into a loop kernel but its result has more than one use}}
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
  ^bb0cted-error @+1 {{is fu(%aor<4xf32>):
    emit.yield %m : tensor  }
  return %0 : tensor<4xf32>

  return %0 : tensor<4xf32>
