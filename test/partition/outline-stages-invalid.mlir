// RUN: dist-opt %s -split-input-file --dist-outline-stages -verify-diagnostics
// One case per error of --dist-outline-stages. Every error is reported
// before the IR changes. Malformed plans, clusters and stage annotations
// are the dialect verifier's (test/dialects/dist/attrs-invalid.mlir).

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {
  func.func @backward(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-note @+1 {{the value is produced here, in stage 1}}
    %a = graph.unary relu %x {dist.virtual_stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'graph.unary' op in pipeline stage 0 uses a value that stage 1 produces; values may only flow to the same or a later stage: fix the 'dist.virtual_stage' annotations (or re-run the planner) so that no producer's stage is after its user's}}
    %b = graph.unary tanh %a {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

// An unannotated op goes to the first stage using it; here that is before
// the stage of its operand.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {
  func.func @unannotated_backward(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-note @+1 {{the value is produced here, in stage 1}}
    %a = graph.unary relu %x {dist.virtual_stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{in pipeline stage 0 uses a value that stage 1 produces (the op has no 'dist.virtual_stage' and goes to stage 0, the first stage using it)}}
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %n {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{function @no_plan has ops annotated with 'dist.virtual_stage' but the module has no 'dist.plan'; plan the module first}}
  func.func @no_plan(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0]>} {
  // expected-error @+1 {{function @two_blocks has 2 blocks; outlining pipeline stages needs a single-block body}}
  func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  ^unreachable:
    return %x : tensor<4xf32>
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0]>} {
  // expected-error @+1 {{function @twice already has 'dist.stage' regions and also ops annotated with 'dist.virtual_stage' outside them; outline once, on the IR the planner wrote}}
  func.func @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
    %s = dist.stage 0 on #dist.mesh<shape = [1, 1], devices = [0]> (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      %r = graph.unary relu %a : (tensor<4xf32>) -> tensor<4xf32>
      dist.yield %r : tensor<4xf32>
    }
    %b = graph.unary tanh %s {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

