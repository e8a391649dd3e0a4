// RUN: dist-opt %s --dist-outline-stage-functions -verify-diagnostics


// A name that is taken is an error before anything changes.
module {
  func.func private @f_stage0(%x: tensor<4xf32>) -> tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{would become @f_stage0, but the module already has a symbol of that name; rename it or outline into functions once}}
    %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      dist.yield %a : tensor<4xf32>
    }
    return %0 : tensor<4xf32>
  }
}
