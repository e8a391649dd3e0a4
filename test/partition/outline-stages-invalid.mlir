// RUN: dist-opt %s -split-input-file --dist-outline-stages -verify-diagnostics
// One case per error of --dist-outline-stages. Every error is reported
// before the IR changes.

module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64}} {
  func.func @backward(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-note @+1 {{the value is produced here, in stage 1}}
    %a = graph.unary relu %x {dist.stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'graph.unary' op in pipeline stage 0 uses a value that stage 1 produces; values may only flow to the same or a later stage: fix the 'dist.stage' annotations (or re-run the planner) so that no producer's stage is after its user's}}
    %b = graph.unary tanh %a {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

// An unannotated op goes to the first stage using it; here that is before
// the stage of its operand.
module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64}} {
  func.func @unannotated_backward(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-note @+1 {{the value is produced here, in stage 1}}
    %a = graph.unary relu %x {dist.stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{in pipeline stage 0 uses a value that stage 1 produces (the op has no 'dist.stage' and goes to stage 0, the first stage using it)}}
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %n {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64, chunks = 2 : i64}} {
  func.func @out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.stage' = 4 is out of range: 'dist.plan' has pp * chunks = 2 * 2 = 4 virtual stages (0..3); re-run the planner or fix the annotation}}
    %a = graph.unary relu %x {dist.stage = 4 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64}} {
  func.func @not_an_index(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.stage' must be an integer virtual stage index, got "first"}}
    %a = graph.unary relu %x {dist.stage = "first"} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{function @no_plan has ops annotated with 'dist.stage' but the module has no 'dist.plan'; plan the module first}}
  func.func @no_plan(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' must be a dictionary of plan fields (dp, tp, pp, chunks, ...), got "dp=2"}}
module attributes {dist.plan = "dp=2"} {
  func.func @plan_not_dict(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' needs an integer field 'pp' to outline pipeline stages; re-run the planner to write a complete plan}}
module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64}} {
  func.func @no_pp(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' needs an integer field 'tp' to outline pipeline stages, got a non-integer}}
module attributes {dist.plan = {dp = 1 : i64, tp = "two", pp = 1 : i64}} {
  func.func @tp_not_int(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' field 'dp' must be at least 1, got 0}}
module attributes {dist.plan = {dp = 0 : i64, tp = 1 : i64, pp = 1 : i64}} {
  func.func @zero_dp(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' is too large to outline: 65536 data-parallel replicas, tp = 1024, pp = 1, chunks = 1; a stage mesh holds at most 16777216 devices and a pipeline at most 1048576 virtual stages}}
module attributes {dist.plan = {dp = 65536 : i64, tp = 1024 : i64, pp = 1 : i64}} {
  func.func @huge(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' needs 4 devices (tp * dp * pp) but 'dist.cluster' has 2; plan for this cluster again}}
module attributes {dist.cluster = #dist.cluster<"pair", kinds = [#dist.device_kind<"gpu", memory = 1024, bandwidth = 1.0e+9, flops = {f32 = 1.0e+12 : f64}>], groups = [#dist.device_group<first = 0, count = 2, kind = "gpu">], links = [#dist.link<"node", span = 2, bandwidth = 1.0e+9, latency = 1.0e-6>]>,
                   dist.plan = {dp = 2 : i64, tp = 1 : i64, pp = 2 : i64}} {
  func.func @too_few_devices(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 1 : i64}} {
  // expected-error @+1 {{function @two_blocks has 2 blocks; outlining pipeline stages needs a single-block body}}
  func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  ^unreachable:
    return %x : tensor<4xf32>
  }
}

// -----

module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 1 : i64}} {
  // expected-error @+1 {{function @twice already has 'dist.stage' regions and also ops annotated with 'dist.stage' outside them; outline once, on the IR the planner wrote}}
  func.func @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
    %s = dist.stage 0 on #dist.mesh<shape = [1, 1], devices = [0]> (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      %r = graph.unary relu %a : (tensor<4xf32>) -> tensor<4xf32>
      dist.yield %r : tensor<4xf32>
    }
    %b = graph.unary tanh %s {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

// Per-stage replicas: device counts per stage checked against the cluster.
// expected-error @+1 {{'dist.plan' needs 5 devices (tp * sum(replicas)) but 'dist.cluster' has 2; plan for this cluster again}}
module attributes {dist.cluster = #dist.cluster<"pair", kinds = [#dist.device_kind<"gpu", memory = 1024, bandwidth = 1.0e+9, flops = {f32 = 1.0e+12 : f64}>], groups = [#dist.device_group<first = 0, count = 2, kind = "gpu">], links = [#dist.link<"node", span = 2, bandwidth = 1.0e+9, latency = 1.0e-6>]>,
                   dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64, replicas = array<i64: 4, 1>}} {
  func.func @replicas_too_many(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' field 'replicas' must be an i64 array with one replica count per pipeline stage (pp = 2), got array<i64: 3>}}
module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64, replicas = array<i64: 3>}} {
  func.func @replicas_count(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' has 'replicas' together with dp = 2 and chunks = 1; per-stage replicas need dp = 1 and chunks = 1}}
module attributes {dist.plan = {dp = 2 : i64, tp = 1 : i64, pp = 2 : i64, replicas = array<i64: 3, 1>}} {
  func.func @replicas_and_dp(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'dist.plan' replica counts must be at least 1, got 0}}
module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64, replicas = array<i64: 3, 0>}} {
  func.func @replicas_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}
