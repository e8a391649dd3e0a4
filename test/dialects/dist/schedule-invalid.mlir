// RUN: dist-opt %s -split-input-file -verify-diagnostics
// One case per verifier message of the schedule ops (DistScheduleOps.cpp)
// and of list-addressed transfers.

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{unknown schedule kind "2f2b"; expected "forward" (an inference stream) or a training schedule}}
  dist.schedule for @main kind "2f2b" microbatches 1 {
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{needs at least one micro-batch, got 0}}
  dist.schedule for @main kind "gpipe" microbatches 0 {
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    // expected-error @+1 {{is list 1 but comes where list 0 belongs; the lists are in rank order from 0}}
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [0]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{has 1 action lists but the plan has 2 pipeline ranks}}
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{runs 2 micro-batches but the plan has 1}}
  dist.schedule for @main kind "gpipe" microbatches 2 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{schedules @nothing, which is not a function of the module}}
  dist.schedule for @nothing kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{runs @helper, which is not a stage function (it has no 'dist.virtual_stage'; dist-outline-stage-functions makes them)}}
      dist.forward @helper microbatch 0
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{runs virtual stage 1 (@main_stage1) on list 0, which runs pipeline stage 0; virtual stage v runs on pipeline stage v mod pp = v mod 2}}
      dist.forward @main_stage1 microbatch 0
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{runs @missing, which is not a function of the module}}
      dist.forward @missing microbatch 0
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{peer rank 2 is out of range: the plan has 2 action lists}}
      dist.send_activation microbatch 0 chunk 0 to 2
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{chunk 1 is out of range: the plan has 1 chunk(s) per stage}}
      dist.grad_all_reduce chunk 1
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{micro-batch must be non-negative, got -1}}
      dist.recv_grad microbatch -1 chunk 0 from 1
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{is not a schedule action; a dist.actions list holds forward, backward, transfer, gradient sync and optimizer actions only}}
      "dist.yield"() : () -> ()
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  func.func @bad(%v: tensor<4xf32>) {
    // expected-error @+1 {{peer list 2 is out of range: the plan has 2 action lists}}
    dist.send %v to list 2 tag 0 : tensor<4xf32>
    return
  }
}

// -----

module {
  func.func @bad(%v: tensor<4xf32>) {
    // expected-error @+1 {{names its peer by action list, which needs the module's plan ('dist.plan')}}
    dist.send %v to list 0 tag 0 : tensor<4xf32>
    return
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  func.func @bad2(%v: tensor<4xf32>) {
    // expected-error @+1 {{tag must be in [0, 32767] (what the runtime's transfers carry), got 40000}}
    %r = dist.recv from 1 tag 40000 : tensor<4xf32>
    return
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'dist.action_list' is 5 but the module's plan has 2 action lists}}
  func.func @prog() attributes {dist.action_list = 5 : i64} {
    return
  }
}

// -----

module {
  // expected-error @+1 {{'dist.train_phase' marks the function of one stage's forward, backward_input or backward_weight work (dist-partition writes it), got "optimizer"}}
  func.func private @f_stage0_optimizer() attributes {dist.train_phase = "optimizer"}
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "pipedream", stages = [0]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  dist.schedule for @main kind "pipedream" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      dist.forward @main_stage0 microbatch 0
      dist.backward @main_stage0 microbatch 0
      // expected-error @+1 {{micro-batch must be non-negative, got -2}}
      dist.optimizer_step microbatch -2
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 2, schedule = "pipedream", stages = [0]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  dist.schedule for @main kind "pipedream" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [2, 1], devices = [0, 1]> {
      // expected-error @+1 {{micro-batch must be non-negative, got -1}}
      dist.grad_all_reduce microbatch -1 chunk 0
    }
  }
}

// -----

// The counts and indices are read signed: negative values are refused, not
// wrapped around to huge ones.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{needs at least one micro-batch, got -1}}
  dist.schedule for @main kind "gpipe" microbatches -1 {
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    // expected-error @+1 {{is list -1 but comes where list 0 belongs}}
    dist.actions -1 on #dist.mesh<shape = [1, 1], devices = [0]> {
    }
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32>
  dist.schedule for @main kind "gpipe" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
      // expected-error @+1 {{micro-batch must be non-negative, got -1}}
      dist.forward @main_stage0 microbatch -1
    }
    dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
    }
  }
}
