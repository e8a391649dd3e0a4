// An emit.kernel with an empty body: the verifier asked the empty block for
// its terminator (found by dist-fuzz mlir; crashed only sometimes).
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
  }
  return %0 : tensor<4xf32>
}
