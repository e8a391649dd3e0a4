// RUN: dist-opt %s -split-input-file --dist-verify-schedule -verify-diagnostics -o /dev/null
// One hand-broken schedule per kind of problem; the error is on the action.

// The schedule dist-materialize-schedule writes for this plan verifies.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = call @main_stage0(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = call @main_stage1(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %1 : tensor<1x4xf32>
  }
  func.func private @main_stage0(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 0 : i64} {
    %0 = graph.unary relu %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  func.func private @main_stage1(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 1 : i64} {
    %0 = graph.unary tanh %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  dist.schedule for @main kind "gpipe" microbatches 2 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.send_activation microbatch 0 chunk 0 to 1
      dist.forward @main_stage0 microbatch 1
      dist.send_activation microbatch 1 chunk 0 to 1
      dist.recv_grad microbatch 0 chunk 0 from 1
      dist.backward @main_stage0 microbatch 0
      dist.recv_grad microbatch 1 chunk 0 from 1
      dist.backward @main_stage0 microbatch 1
      dist.optimizer_step
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
      dist.recv_activation microbatch 0 chunk 0 from 0
      dist.forward @main_stage1 microbatch 0
      dist.recv_activation microbatch 1 chunk 0 from 0
      dist.forward @main_stage1 microbatch 1
      dist.backward @main_stage1 microbatch 0
      dist.send_grad microbatch 0 chunk 0 to 0
      dist.backward @main_stage1 microbatch 1
      dist.send_grad microbatch 1 chunk 0 to 0
      dist.optimizer_step
    }
  }
}

// -----

// A backward moved before its forward.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = call @main_stage0(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = call @main_stage1(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %1 : tensor<1x4xf32>
  }
  func.func private @main_stage0(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 0 : i64} {
    %0 = graph.unary relu %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  func.func private @main_stage1(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 1 : i64} {
    %0 = graph.unary tanh %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  dist.schedule for @main kind "gpipe" microbatches 2 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.send_activation microbatch 0 chunk 0 to 1
      dist.forward @main_stage0 microbatch 1
      dist.send_activation microbatch 1 chunk 0 to 1
      dist.recv_grad microbatch 0 chunk 0 from 1
      dist.backward @main_stage0 microbatch 0
      dist.recv_grad microbatch 1 chunk 0 from 1
      dist.backward @main_stage0 microbatch 1
      dist.optimizer_step
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
      // expected-error @+1 {{schedule rank 1, action 0 (B0.0): backward before its forward}}
      dist.backward @main_stage1 microbatch 0
      dist.recv_activation microbatch 0 chunk 0 from 0
      dist.forward @main_stage1 microbatch 0
      dist.recv_activation microbatch 1 chunk 0 from 0
      dist.forward @main_stage1 microbatch 1
      dist.send_grad microbatch 0 chunk 0 to 0
      dist.backward @main_stage1 microbatch 1
      dist.send_grad microbatch 1 chunk 0 to 0
      dist.optimizer_step
    }
  }
}

// -----

// A receive from the wrong rank.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = call @main_stage0(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = call @main_stage1(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %1 : tensor<1x4xf32>
  }
  func.func private @main_stage0(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 0 : i64} {
    %0 = graph.unary relu %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  func.func private @main_stage1(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 1 : i64} {
    %0 = graph.unary tanh %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  dist.schedule for @main kind "gpipe" microbatches 2 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.send_activation microbatch 0 chunk 0 to 1
      dist.forward @main_stage0 microbatch 1
      dist.send_activation microbatch 1 chunk 0 to 1
      dist.recv_grad microbatch 0 chunk 0 from 1
      dist.backward @main_stage0 microbatch 0
      dist.recv_grad microbatch 1 chunk 0 from 1
      dist.backward @main_stage0 microbatch 1
      dist.optimizer_step
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
      // expected-error @+1 {{schedule rank 1, action 0 (recvA0.0>1): activation must come from rank 0}}
      dist.recv_activation microbatch 0 chunk 0 from 1
      dist.forward @main_stage1 microbatch 0
      dist.recv_activation microbatch 1 chunk 0 from 0
      dist.forward @main_stage1 microbatch 1
      dist.backward @main_stage1 microbatch 0
      dist.send_grad microbatch 0 chunk 0 to 0
      dist.backward @main_stage1 microbatch 1
      dist.send_grad microbatch 1 chunk 0 to 0
      dist.optimizer_step
    }
  }
}

// -----

// A forward whose input never arrives on this rank.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = call @main_stage0(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = call @main_stage1(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %1 : tensor<1x4xf32>
  }
  func.func private @main_stage0(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 0 : i64} {
    %0 = graph.unary relu %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  func.func private @main_stage1(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 1 : i64} {
    %0 = graph.unary tanh %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  dist.schedule for @main kind "gpipe" microbatches 2 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.send_activation microbatch 0 chunk 0 to 1
      dist.forward @main_stage0 microbatch 1
      dist.send_activation microbatch 1 chunk 0 to 1
      dist.recv_grad microbatch 0 chunk 0 from 1
      dist.backward @main_stage0 microbatch 0
      dist.recv_grad microbatch 1 chunk 0 from 1
      dist.backward @main_stage0 microbatch 1
      dist.optimizer_step
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
      // expected-error @+1 {{schedule rank 1, action 0 (F0.0): input activation not received; put recvA0.0>0 before it}}
      dist.forward @main_stage1 microbatch 0
      dist.recv_activation microbatch 1 chunk 0 from 0
      dist.forward @main_stage1 microbatch 1
      dist.backward @main_stage1 microbatch 0
      dist.send_grad microbatch 0 chunk 0 to 0
      dist.backward @main_stage1 microbatch 1
      dist.send_grad microbatch 1 chunk 0 to 0
      dist.optimizer_step
    }
  }
}

// -----

// Rank 0 waits for the gradient of micro-batch 0, which rank 1 sends only
// after the forward of micro-batch 1, whose activation rank 0 has not sent.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = call @main_stage0(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = call @main_stage1(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %1 : tensor<1x4xf32>
  }
  func.func private @main_stage0(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 0 : i64} {
    %0 = graph.unary relu %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  func.func private @main_stage1(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 1 : i64} {
    %0 = graph.unary tanh %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  dist.schedule for @main kind "gpipe" microbatches 2 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.send_activation microbatch 0 chunk 0 to 1
      // expected-error @+1 {{schedule deadlocks: rank 0 waits at action 2 (recvG0.0>1); rank 1 waits at action 2 (recvA1.0>0)}}
      dist.recv_grad microbatch 0 chunk 0 from 1
      dist.forward @main_stage0 microbatch 1
      dist.send_activation microbatch 1 chunk 0 to 1
      dist.backward @main_stage0 microbatch 0
      dist.recv_grad microbatch 1 chunk 0 from 1
      dist.backward @main_stage0 microbatch 1
      dist.optimizer_step
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
      dist.recv_activation microbatch 0 chunk 0 from 0
      dist.forward @main_stage1 microbatch 0
      dist.recv_activation microbatch 1 chunk 0 from 0
      dist.forward @main_stage1 microbatch 1
      dist.backward @main_stage1 microbatch 0
      dist.send_grad microbatch 0 chunk 0 to 0
      dist.backward @main_stage1 microbatch 1
      dist.send_grad microbatch 1 chunk 0 to 0
      dist.optimizer_step
    }
  }
}

// -----

// A device too small for the activations every rank keeps in flight.
module attributes {dist.cluster = #dist.cluster<"tiny", kinds = [#dist.device_kind<"dev", memory = 1024, bandwidth = 1.0e+09, flops = {fp32 = 1.0e+12 : f64}>], nodes = [#dist.node_group<kind = "dev", nodes = 1, devices = 2, link = #dist.link<"bus", bandwidth = 1.0e+09, latency = 1.0e-06>>]>, dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1], dtype = fp32>} {
  func.func @main(%x: tensor<1x4096xf32>, %w0: tensor<4096x4096xf32>) -> tensor<1x4096xf32> {
    %0 = call @main_stage0(%x) : (tensor<1x4096xf32>) -> tensor<1x4096xf32>
    %1 = call @main_stage1(%0) : (tensor<1x4096xf32>) -> tensor<1x4096xf32>
    return %1 : tensor<1x4096xf32>
  }
  func.func private @main_stage0(%a: tensor<1x4096xf32>) -> tensor<1x4096xf32> attributes {dist.virtual_stage = 0 : i64} {
    %w = graph.weight "w0" : tensor<4096x4096xf32>
    %0 = graph.matmul %a, %w {dist.layer = 0 : i64} : (tensor<1x4096xf32>, tensor<4096x4096xf32>) -> tensor<1x4096xf32>
    return %0 : tensor<1x4096xf32>
  }
  func.func private @main_stage1(%a: tensor<1x4096xf32>) -> tensor<1x4096xf32> attributes {dist.virtual_stage = 1 : i64} {
    %w = graph.weight "w1" : tensor<4096x4096xf32>
    %0 = graph.matmul %a, %w {dist.layer = 1 : i64} : (tensor<1x4096xf32>, tensor<4096x4096xf32>) -> tensor<1x4096xf32>
    return %0 : tensor<1x4096xf32>
  }
  dist.schedule for @main kind "gpipe" microbatches 2 {
    // expected-error @+1 {{schedule rank 0 (dev) needs}}
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.send_activation microbatch 0 chunk 0 to 1
      dist.forward @main_stage0 microbatch 1
      dist.send_activation microbatch 1 chunk 0 to 1
      dist.recv_grad microbatch 0 chunk 0 from 1
      dist.backward @main_stage0 microbatch 0
      dist.recv_grad microbatch 1 chunk 0 from 1
      dist.backward @main_stage0 microbatch 1
      dist.optimizer_step
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
      dist.recv_activation microbatch 0 chunk 0 from 0
      dist.forward @main_stage1 microbatch 0
      dist.recv_activation microbatch 1 chunk 0 from 0
      dist.forward @main_stage1 microbatch 1
      dist.backward @main_stage1 microbatch 0
      dist.send_grad microbatch 0 chunk 0 to 0
      dist.backward @main_stage1 microbatch 1
      dist.send_grad microbatch 1 chunk 0 to 0
      dist.optimizer_step
    }
  }
}

// -----

// expected-error @+1 {{dist-verify-schedule: the module has no dist.schedule; write one with dist-materialize-schedule}}
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0]>} {
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = call @main_stage0(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
  func.func private @main_stage0(%a: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<1x4xf32>
  }
  // expected-error @+1 {{is a "gpipe" schedule but the plan's is "1f1b"; materialize the schedule of this plan again}}
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.backward @main_stage0 microbatch 0
      dist.optimizer_step
    }
  }
}
