// RUN: dist-opt %s -split-input-file --dist-partition -verify-diagnostics

// A backward that reads a later stage's forward value cannot run in
// pipeline order.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %w = graph.weight "w" : tensor<4x4xf32>
    %v = graph.weight "v" : tensor<4x4xf32>
    %h = graph.matmul %x, %w {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %y = graph.matmul %h, %v {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    // expected-error @+1 {{runs in stage 0's backward_weight but reads a value of stage 1's forward, which runs later in a pipeline}}
    %dw = graph.matmul %x, %y {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
    return %l : tensor<f32>
  }
}

// -----

// A forward op of stage 0 that reads stage 1.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %h = graph.unary relu %x {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    // expected-error @+1 {{runs in stage 0's forward but reads a value of stage 1's forward}}
    %y = graph.unary relu %h {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Recomputing a forward that draws dropout masks would not reproduce them.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", recompute = full, stages = [0, 1]>} {
  // expected-error @+1 {{the plan recomputes the forward (recompute = full) but stage 0's forward draws dropout masks}}
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %m = graph.dropout_mask {dist.virtual_stage = 0 : i64, graph.phase = "forward", ratio = 0.5 : f64, seed = 1 : i64} : tensor<1x4xf32>
    %h = graph.binary mul %x, %m {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = graph.unary relu %h {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {dist.virtual_stage = 1 : i64, graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// ZeRO-3 keeps each stage's blocks of the weights it trains: a weight one
// stage updates and a stage on another pipeline rank reads (a tied
// embedding) is refused.
module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 4, schedule = "gpipe", zero = 3, stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<4x4xf32> {graph.update = "w"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    // expected-error @+1 {{is read by stage 1 and updated by stage 0 (a tied weight); ZeRO-3 keeps each stage's blocks of the weights it trains, so a weight shared by stages on two pipeline ranks is not run yet; untie it or use zero=2}}
    %w = graph.weight "w" : tensor<4x4xf32>
    %h = graph.matmul %x, %w {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %y = graph.matmul %h, %w {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    %dw = graph.matmul %x, %h {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
    %s = graph.state "step" {graph.phase = "optimizer"} : tensor<f32>
    %nw = graph.sgd_update %w, %dw, %s {graph.phase = "optimizer", lr = 1.000000e-01 : f64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %l, %nw : tensor<f32>, tensor<4x4xf32>
  }
}

// -----

// A stage's forward result returned as an update must be a running
// statistic that forward reads (batch norm's): here 'h' is no weight.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<1x4xf32> {graph.update = "h"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %w = graph.weight "w" : tensor<4x4xf32>
    %v = graph.weight "v" : tensor<4x4xf32>
    %h = graph.matmul %x, %w {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %y = graph.matmul %h, %v {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {dist.virtual_stage = 1 : i64, graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    // expected-error @+1 {{returns a stage function's result as update #1 ('h'), which is neither computed by the optimizer nor a running statistic its stage's forward reads and updates}}
    return %l, %h : tensor<f32>, tensor<1x4xf32>
  }
}

// -----

// An optimizer op reads one stage's gradients or the sum of a tied
// weight's parts (a backward add); here an optimizer-phase op mixes the
// gradients of two stages.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<4x4xf32> {graph.update = "w"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %w = graph.weight "w" : tensor<4x4xf32>
    %h = graph.matmul %x, %w {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %y = graph.matmul %h, %w {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {dist.virtual_stage = 1 : i64, graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    %d0 = graph.matmul %x, %h {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
    %d1 = graph.matmul %h, %y {dist.virtual_stage = 1 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
    // expected-error @+1 {{updates with values of stages 0 and 1; an optimizer op reads one stage's gradients, or the sum of a tied weight's parts}}
    %dw = graph.binary add %d1, %d0 {graph.phase = "optimizer"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %s = graph.state "step" {graph.phase = "optimizer"} : tensor<f32>
    %nw = graph.sgd_update %w, %dw, %s {graph.phase = "optimizer", lr = 1.000000e-01 : f64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %l, %nw : tensor<f32>, tensor<4x4xf32>
  }
}
