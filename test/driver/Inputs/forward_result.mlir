// A use at the top level that a result inside an emit.kernel (isolated from
// above) resolves; the kernel's second block header does not parse.
%m = graph.unary neg %n : (tensor<4xf32>) -> tensor<4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
  ^bb1(%b tensor<4xf32>):
    emit.yield %n : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
