// RUN: dist-opt %s -split-input-file -verify-diagnostics

func.func @stage_index(%x: tensor<2xf32>) {
  // expected-error @+1 {{stage index must be non-negative, got -1}}
  %0 = dist.stage -1 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    dist.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @stage_args(%x: tensor<2xf32>) {
  // expected-error @+1 {{body has 0 arguments but the stage has 1 inputs}}
  %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<2xf32>) -> tensor<2xf32> {
    %c = dist.recv from 1 tag 0 : tensor<2xf32>
    dist.yield %c : tensor<2xf32>
  }
  return
}

// -----

func.func @stage_arg_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{body argument 0 has type 'tensor<3xf32>' but input 0 has type 'tensor<2xf32>'}}
  %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<2xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    dist.yield %a : tensor<3xf32>
  }
  return
}

// -----

func.func @stage_yield(%x: tensor<2xf32>) {
  // expected-error @+1 {{yields 1 values whose types differ from the stage's result types}}
  %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<2xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<2xf32>):
    dist.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @send_peer(%x: tensor<2xf32>) {
  // expected-error @+1 {{peer device number must be non-negative, got -1}}
  dist.send %x to -1 tag 0 : tensor<2xf32>
  return
}

// -----

func.func @recv_tag() {
  // expected-error @+1 {{tag must be in [0, 32767] (what the runtime's transfers carry), got -3}}
  %0 = dist.recv from 1 tag -3 : tensor<2xf32>
  return
}

// -----

func.func @group_empty(%x: tensor<2xf32>) {
  // expected-error @+1 {{an empty device group is written `world` (every rank of the job)}}
  %0 = dist.all_reduce %x sum over [] : tensor<2xf32>
  return
}

// -----

func.func @group_empty_generic(%x: tensor<2xf32>) {
  // expected-error @+1 {{needs a non-empty device group}}
  %0 = "dist.all_gather"(%x) {axis = 0 : i64, group = array<i64>} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @world_only_for_all_reduce(%x: tensor<2xf32>) {
  // expected-error @+1 {{expected '['}}
  %0 = dist.all_gather %x axis 0 over world : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @group_negative(%x: tensor<2xf32>) {
  // expected-error @+1 {{group device numbers must be non-negative, got -1}}
  %0 = dist.all_reduce %x max over [0, -1] : tensor<2xf32>
  return
}

// -----

func.func @group_twice(%x: tensor<2xf32>) {
  // expected-error @+1 {{group lists device 3 twice}}
  %0 = dist.all_reduce %x sum over [3, 3] : tensor<2xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<2xf32>) {
  // expected-error @+1 {{axis 1 is out of range for a rank-1 tensor}}
  %0 = dist.all_gather %x axis 1 over [0, 1] : tensor<2xf32> -> tensor<4xf32>
  return
}

// -----

func.func @gather_size(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result dimension 0 should be 4, got 2}}
  %0 = dist.all_gather %x axis 0 over [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_elt(%x: tensor<2xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from input element type 'f32'}}
  %0 = dist.all_gather %x axis 0 over [0, 1] : tensor<2xf32> -> tensor<4xf16>
  return
}

// -----

func.func @gather_rank(%x: tensor<2xf32>) {
  // expected-error @+1 {{result rank 2 differs from input rank 1}}
  %0 = dist.all_gather %x axis 0 over [0, 1] : tensor<2xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @scatter_divisible(%x: tensor<5xf32>) {
  // expected-error @+1 {{dimension 0 of size 5 does not split into 2 equal parts}}
  %0 = dist.reduce_scatter %x sum axis 0 over [0, 1] : tensor<5xf32> -> tensor<2xf32>
  return
}

// -----

func.func @slice_divisible(%x: tensor<5xf32>) {
  // expected-error @+1 {{dimension 0 of size 5 does not split into 2 equal parts}}
  %0 = dist.all_slice %x axis 0 over [0, 1] : tensor<5xf32> -> tensor<2xf32>
  return
}

// -----

func.func @slice_size(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result dimension 0 should be 2, got 4}}
  %0 = dist.all_slice %x axis 0 over [0, 1] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @a2a_split_axis(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{split axis 2 is out of range for a rank-2 tensor}}
  %0 = dist.all_to_all %x split 2 concat 0 over [0, 1] : tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @a2a_shape(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{result dimension 1 should be 8, got 4}}
  %0 = dist.all_to_all %x split 0 concat 1 over [0, 1] : tensor<4x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @bcast_root(%x: tensor<2xf32>) {
  // expected-error @+1 {{root device 5 is not a member of the group}}
  %0 = dist.broadcast %x root 5 over [0, 1] : tensor<2xf32>
  return
}

// -----

func.func @split_none(%x: tensor<4xf32>) {
  // expected-error @+1 {{needs at least one micro-batch}}
  "dist.microbatch_split"(%x) {axis = 0 : i64} : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @split_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{micro-batches must all have the same type, got 'tensor<2xf32>' and 'tensor<2xf16>'}}
  %0:2 = dist.microbatch_split %x axis 0 : tensor<4xf32> -> tensor<2xf32>, tensor<2xf16>
  return
}

// -----

func.func @split_divisible(%x: tensor<5xf32>) {
  // expected-error @+1 {{dimension 0 of size 5 does not split into 2 equal parts}}
  %0:2 = dist.microbatch_split %x axis 0 : tensor<5xf32> -> tensor<2xf32>, tensor<2xf32>
  return
}

// -----

func.func @merge_shape(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{result dimension 1 should be 3, got 4}}
  %0 = dist.microbatch_merge %a, %a axis 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @merge_none() {
  // expected-error @+1 {{needs at least one micro-batch}}
  %0 = "dist.microbatch_merge"() {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @merge_axis(%a: tensor<2xf32>) {
  // expected-error @+1 {{axis 3 is out of range for a rank-1 tensor}}
  %0 = dist.microbatch_merge %a, %a axis 3 : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
  return
}

// -----

func.func @tp_copy_group(%x: tensor<2xf32>) {
  // expected-error @+1 {{group lists device 1 twice}}
  %0 = dist.tp_copy %x over [1, 1] : tensor<2xf32>
  return
}

// -----

func.func @ring_key_features(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x12xf32>, %v: tensor<1x4x8x12xf32>) {
  // expected-error @+1 {{key 'tensor<1x4x8x12xf32>' must be [..., positions, 16] with the query's leading dims}}
  %o, %l = dist.ring_attention %q, %k, %v scale 1.0 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>, tensor<1x4x8x12xf32> -> tensor<1x4x8x12xf32>, tensor<1x4x8xf32>
  return
}

// -----

func.func @ring_value_positions(%q: tensor<1x4x8x16xf32>, %v: tensor<1x4x4x12xf32>) {
  // expected-error @+1 {{value 'tensor<1x4x4x12xf32>' must be [..., 8, features] with the query's leading dims}}
  %o, %l = dist.ring_attention %q, %q, %v scale 1.0 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x4x12xf32> -> tensor<1x4x8x12xf32>, tensor<1x4x8xf32>
  return
}

// -----

func.func @ring_result(%q: tensor<1x4x8x16xf32>) {
  // expected-error @+1 {{result 'tensor<1x4x8x8xf32>' must be the query's leading dims x 8 x 16}}
  %o, %l = dist.ring_attention %q, %q, %q scale 1.0 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>, tensor<1x4x8xf32>
  return
}

// -----

func.func @ring_lse(%q: tensor<1x4x8x16xf32>) {
  // expected-error @+1 {{lse 'tensor<1x4x16xf32>' must be the query's leading dims x 8}}
  %o, %l = dist.ring_attention %q, %q, %q scale 1.0 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x16xf32>
  return
}

// -----

func.func @ring_mask(%q: tensor<1x4x8x16xf32>, %m: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{mask 'tensor<1x1x8x8xf32>' must hold the 8 query rows against all 16 positions of the group, its leading dims all 1 or the query's}}
  %o, %l = dist.ring_attention %q, %q, %q mask %m scale 1.0 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x1x8x8xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  return
}

// -----

func.func @ring_group(%q: tensor<1x4x8x16xf32>) {
  // expected-error @+1 {{group lists device 0 twice}}
  %o, %l = dist.ring_attention %q, %q, %q scale 1.0 over [0, 0] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  return
}

// -----

func.func @ring_grad_types(%q: tensor<1x4x8x16xf32>, %l: tensor<1x4x8xf32>) {
  // expected-error @+1 {{the gradients must have the types of the result, query, key and value}}
  %dq, %dk, %dv = dist.ring_attention_grad %q, %q, %q, %q, %l, %q scale 1.0 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>
  return
}

// -----

func.func @balanced_chunks(%x: tensor<1x6x4xf32>) {
  // expected-error @+1 {{'dist.balanced' splits dimension 1 of size 6, which does not cut into the 4 chunks (2 x 2 devices) the balanced split pairs; drop it or use a size that divides}}
  %0 = dist.all_slice %x axis 1 over [0, 1] {dist.balanced} : tensor<1x6x4xf32> -> tensor<1x3x4xf32>
  return
}

// -----

func.func @balanced_gather_chunks(%x: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'dist.balanced' splits dimension 1 of size 6, which does not cut into the 4 chunks}}
  %0 = dist.all_gather %x axis 1 over [0, 1] {dist.balanced} : tensor<1x3x4xf32> -> tensor<1x6x4xf32>
  return
}

// -----

func.func @balanced_leading(%x: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'dist.balanced' splits axis 1 of 'tensor<2x8x4xf32>', whose dimensions before the axis are not all 1; a balanced split takes runs of the flattened elements (move the axis first, or drop it)}}
  %0 = dist.reduce_scatter %x sum axis 1 over [0, 1] {dist.balanced} : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @balanced_ring_odd(%q: tensor<1x4x5x16xf32>) {
  // expected-error @+1 {{'dist.balanced' marks a ring whose device holds 5 queries and 5 keys; a balanced device holds two equal chunks of the sequence, so both must be even (drop it)}}
  %o, %l = dist.ring_attention %q, %q, %q scale 1.0 over [0, 1] {dist.balanced} : tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32> -> tensor<1x4x5x16xf32>, tensor<1x4x5xf32>
  return
}

// -----

func.func @balanced_elsewhere(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.balanced' marks the load-balanced split of a sequence on a dist.all_slice, dist.all_gather, dist.reduce_scatter or ring attention (set by dist-context-parallel)}}
  %0 = dist.all_reduce %x sum over [0, 1] {dist.balanced} : tensor<8xf32>
  return
}

// -----

func.func @balanced_unit(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.balanced' is a unit attribute, got 1 : i64}}
  %0 = dist.all_slice %x axis 0 over [0, 1] {dist.balanced = 1 : i64} : tensor<8xf32> -> tensor<4xf32>
  return
}
