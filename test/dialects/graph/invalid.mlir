// RUN: dist-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the graph dialect.

func.func @case0() {
  // expected-error @+1 {{needs a non-empty name}}
  %0 = graph.weight "" : tensor<2xf32>
  return
}

// -----

func.func @case1() {
  // expected-error @+1 {{has 'offset' or 'size' but no 'file'}}
  %0 = graph.weight "w" {offset = 0 : i64} : tensor<2xf32>
  return
}

// -----

func.func @case2() {
  // expected-error @+1 {{'file' must not be empty}}
  %0 = graph.weight "w" {file = "", offset = 0 : i64, size = 8 : i64} : tensor<2xf32>
  return
}

// -----

func.func @case3() {
  // expected-error @+1 {{with a 'file' needs both 'offset' and 'size'}}
  %0 = graph.weight "w" {file = "m.onnx", offset = 0 : i64} : tensor<2xf32>
  return
}

// -----

func.func @case4() {
  // expected-error @+1 {{'offset' and 'size' must be non-negative}}
  %0 = graph.weight "w" {file = "m.onnx", offset = -1 : i64, size = 8 : i64} : tensor<2xf32>
  return
}

// -----

func.func @case5() {
  // expected-error @+1 {{'size' is 4 bytes but 'tensor<2xf32>' needs 8}}
  %0 = graph.weight "w" {file = "m.onnx", offset = 0 : i64, size = 4 : i64} : tensor<2xf32>
  return
}

// -----

// A ZeRO-3 block of a 4x4 tensor refers to the whole tensor's 64 bytes.
func.func @zero_block_size() {
  // expected-error @+1 {{'size' is 32 bytes but 'tensor<8xf32>' needs 64 (the file holds the whole tensor this is a part of)}}
  %0 = graph.weight "w" {dist.zero_shard = {shape = array<i64: 4, 4>, group = array<i64: 0, 1>}, file = "m.weights", offset = 0 : i64, size = 32 : i64} : tensor<8xf32>
  return
}

// -----

func.func @case6() {
  // expected-error @+2 {{'graph.constant' needs a ranked tensor value}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "graph.constant"() <{value = dense<1> : vector<2xi32>}> : () -> tensor<2xi32>
  return
}

// -----

func.func @case7() {
  // expected-error @+1 {{needs a non-empty ONNX 'op_type'}}
  %0 = graph.opaque ""() : () -> tensor<2xf32>
  return
}

// -----

func.func @case8(%a: tensor<2x3xf32>, %c: tensor<3x4xf16>) {
  // expected-error @+1 {{operand and result element types must match}}
  %0 = graph.matmul %a, %c : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case9(%a: tensor<f32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{operands must have rank >= 1}}
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case10(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{a transposed operand must have rank >= 2}}
  %0 = graph.matmul %a, %b {transpose_lhs = true} : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case11(%a: tensor<2x3xf32>, %b: tensor<5x4xf32>) {
  // expected-error @+1 {{contraction dimensions differ: lhs has 3, rhs has 5}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case12(%a: tensor<2x2x3xf32>, %b: tensor<5x3x4xf32>) {
  // expected-error @+1 {{batch dimensions 2 and 5 do not broadcast}}
  %0 = graph.matmul %a, %b : (tensor<2x2x3xf32>, tensor<5x3x4xf32>) -> tensor<2x2x4xf32>
  return
}

// -----

func.func @case13(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape 2x5 does not match expected 2x4}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @case14(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{bias shape 3 does not broadcast to the result shape 2x4}}
  %0 = graph.matmul %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case15(%a: tensor<2xf32>) {
  // expected-error @+1 {{'is_inf' must yield i1 elements}}
  %0 = graph.unary is_inf %a : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case16(%a: tensor<2xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from the operand's 'f32'}}
  %0 = graph.unary relu %a : (tensor<2xf32>) -> tensor<2xf16>
  return
}

// -----

func.func @case17(%a: tensor<2xf32>) {
  // expected-error @+1 {{result shape 3 does not match expected 2}}
  %0 = graph.unary relu %a : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @case18(%a: tensor<2xf32>) {
  // expected-error @+1 {{'min' 2.000000e+00 is greater than 'max' 1.000000e+00}}
  %0 = graph.clip %a {min = 2.0 : f64, max = 1.0 : f64} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case19(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{operand element types differ: 'f32' vs 'f16'}}
  %0 = graph.binary add %a, %b : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

func.func @case20(%a: tensor<2xf32>) {
  // expected-error @+1 {{'or' needs i1 operands}}
  %0 = graph.binary or %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return
}

// -----

func.func @case21(%a: tensor<2xf32>) {
  // expected-error @+1 {{result element type 'f32' should be 'i1'}}
  %0 = graph.binary equal %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case22(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand shapes 2x3 and 4 do not broadcast}}
  %0 = graph.binary mul %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @case23(%a: tensor<2xf32>) {
  // expected-error @+1 {{condition must have i1 elements, got 'f32'}}
  %0 = graph.where %a, %a, %a : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case24(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{branch and result element types must match}}
  %0 = graph.where %c, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

func.func @case25(%c: tensor<3xi1>, %a: tensor<2xf32>) {
  // expected-error @+1 {{shapes 3, 2 and 2 do not broadcast}}
  %0 = graph.where %c, %a, %a : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case26(%a: tensor<2xf32>) {
  // expected-error @+1 {{result shape 3 does not match expected 2}}
  %0 = graph.cast %a : (tensor<2xf32>) -> tensor<3xi32>
  return
}

// -----

func.func @case27(%a: tensor<2xf32>) {
  // expected-error @+1 {{'ratio' must be in [0, 1), got 1.000000e+00}}
  %0 = graph.dropout %a {ratio = 1.0 : f64} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case28(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from the operand's 'f32'}}
  %0 = graph.reshape %a : (tensor<2x3xf32>) -> tensor<6xf16>
  return
}

// -----

func.func @case29(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{element count changes from 6 to 7}}
  %0 = graph.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>
  return
}

// -----

func.func @case30(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'axis' 3 is out of range for rank 2}}
  %0 = graph.flatten %a {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  return
}

// -----

func.func @case31(%a: tensor<2x3x4xf32>) {
  // expected-error @+1 {{result shape 6x4 does not match expected 2x12}}
  %0 = graph.flatten %a {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @case32(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'perm' has 1 entries but the operand has rank 2}}
  %0 = graph.transpose %a {perm = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @case33(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'perm' is not a permutation of [0, 2)}}
  %0 = graph.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @case34(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{'axis' 2 is out of range for rank 2}}
  %0:2 = graph.split %a {axis = 2 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @case35(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{needs at least one result}}
  graph.split %a {axis = 1 : i64} : (tensor<2x4xf32>) -> ()
  return
}

// -----

func.func @case36(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{every result must have the operand's rank 2}}
  %0:2 = graph.split %a {axis = 1 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @case37(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{result shape 3x2 differs from the operand outside the split axis}}
  %0:2 = graph.split %a {axis = 1 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<3x2xf32>)
  return
}

// -----

func.func @case38(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{result sizes along axis 1 add up to 3, not 4}}
  %0:2 = graph.split %a {axis = 1 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @case39(%a: tensor<4xf32>) {
  // expected-error @+1 {{'starts', 'ends', 'axes' and 'steps' must have the same length}}
  %0 = graph.slice %a {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case40(%a: tensor<4xf32>) {
  // expected-error @+1 {{'axes' 1 is out of range for rank 1}}
  %0 = graph.slice %a {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @case41(%a: tensor<4xf32>) {
  // expected-error @+1 {{axis 0 is listed twice}}
  %0 = graph.slice %a {axes = array<i64: 0, -1>, starts = array<i64: 0, 0>, ends = array<i64: 1, 1>, steps = array<i64: 1, 1>} : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @case42(%a: tensor<4xf32>) {
  // expected-error @+1 {{'steps' must not contain 0}}
  %0 = graph.slice %a {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 0>} : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @case43(%a: tensor<4xf32>) {
  // expected-error @+1 {{result shape 3 does not match expected 2}}
  %0 = graph.slice %a {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 2>} : (tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @case44() {
  // expected-error @+1 {{needs at least one input}}
  %0 = graph.concat {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @case45(%a: tensor<4xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{every input must have rank 1}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<4xf32>, tensor<2x2xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @case46(%a: tensor<4x2xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+1 {{inputs differ in dimension 1, which is not the concatenation axis}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<6x2xf32>
  return
}

// -----

func.func @case47(%a: tensor<4xf32>) {
  // expected-error @+1 {{'axis' 1 is out of range for rank 1}}
  %0 = graph.concat %a {axis = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case48(%a: tensor<3xf32>) {
  // expected-error @+1 {{operand shape 3 does not broadcast to 2x4}}
  %0 = graph.expand %a : (tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case49(%a: tensor<3xf32>) {
  // expected-error @+1 {{'pads' needs 2 entries (begins then ends), got 1}}
  %0 = graph.pad constant %a {pads = array<i64: 1>} : (tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case50(%a: tensor<3xf32>) {
  // expected-error @+1 {{'pads' crop dimension 0 below zero}}
  %0 = graph.pad constant %a {pads = array<i64: -2, -2>} : (tensor<3xf32>) -> tensor<0xf32>
  return
}

// -----

func.func @case51(%a: tensor<3xf32>) {
  // expected-error @+1 {{operand must have rank >= 2, got 1}}
  %0 = graph.trilu %a : (tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @case52(%a: tensor<3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = graph.gather %a, %b : (tensor<3xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case53(%a: tensor<3xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'axis' 1 is out of range for rank 1}}
  %0 = graph.gather %a, %i {axis = 1 : i64} : (tensor<3xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @case54(%a: tensor<3xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{table must be 2-D, got rank 1}}
  %0 = graph.embedding %a, %i : (tensor<3xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @case55(%a: tensor<3x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = graph.embedding %a, %i : (tensor<3x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case56(%a: tensor<3x4xf32>, %w: tensor<3x4xf32>) {
  // expected-error @+1 {{input must be N x C x spatial..., got rank 2}}
  %0 = graph.conv %a, %w {strides = array<i64>, pads = array<i64>, dilations = array<i64>} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case57(%a: tensor<1x3x8xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+1 {{weight rank 2 differs from input rank 3}}
  %0 = graph.conv %a, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x3xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case58(%a: tensor<1x3x8xf32>, %w: tensor<4x3x1xf32>) {
  // expected-error @+1 {{needs 1 strides and dilations and 2 pads for 1 spatial dimensions}}
  %0 = graph.conv %a, %w {strides = array<i64: 1>, pads = array<i64: 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x3x1xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case59(%a: tensor<1x3x8xf32>, %w: tensor<4x3x1xf32>) {
  // expected-error @+1 {{strides and dilations must be positive}}
  %0 = graph.conv %a, %w {strides = array<i64: 0>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x3x1xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case60(%a: tensor<1x3x8xf32>, %w: tensor<4x3x1xf32>) {
  // expected-error @+1 {{pads must be non-negative}}
  %0 = graph.conv %a, %w {strides = array<i64: 1>, pads = array<i64: -1, 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x3x1xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case61(%a: tensor<1x3x8xf32>, %w: tensor<4x3x1xf32>) {
  // expected-error @+1 {{'group' must be positive}}
  %0 = graph.conv %a, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 0 : i64} : (tensor<1x3x8xf32>, tensor<4x3x1xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case62(%a: tensor<1x3x8xf32>, %w: tensor<4x2x1xf32>) {
  // expected-error @+1 {{input has 3 channels but weight expects 2 x group 1}}
  %0 = graph.conv %a, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x2x1xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case63(%a: tensor<1x4x8xf32>, %w: tensor<5x2x1xf32>) {
  // expected-error @+1 {{filter count 5 is not divisible by group 2}}
  %0 = graph.conv %a, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 2 : i64} : (tensor<1x4x8xf32>, tensor<5x2x1xf32>) -> tensor<1x5x8xf32>
  return
}

// -----

func.func @case64(%a: tensor<1x3x8xf32>, %w: tensor<4x3x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias must be 1-D of size 4}}
  %0 = graph.conv %a, %w, %b {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x3x1xf32>, tensor<3xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case65(%a: tensor<1x3x8xf32>, %w: tensor<4x3x1xf16>) {
  // expected-error @+1 {{input, weight and result element types must match}}
  %0 = graph.conv %a, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x3x1xf16>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case66(%a: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{result shape 1x4x4 does not match expected 1x4x3}}
  %0 = graph.conv %a, %w {strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @case67(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{input must be N x C x spatial..., got rank 2}}
  %0 = graph.pool max %a {global} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case68(%a: tensor<1x3x4xf32>) {
  // expected-error @+1 {{global pooling takes no window attributes}}
  %0 = graph.pool max %a {global, kernel = array<i64: 2>} : (tensor<1x3x4xf32>) -> tensor<1x3x1xf32>
  return
}

// -----

func.func @case69(%a: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'kernel' needs 1 entries}}
  %0 = graph.pool max %a {kernel = array<i64: 2, 2>} : (tensor<1x3x4xf32>) -> tensor<1x3x1xf32>
  return
}

// -----

func.func @case70(%a: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'kernel' entries must be positive}}
  %0 = graph.pool max %a {kernel = array<i64: 0>} : (tensor<1x3x4xf32>) -> tensor<1x3x1xf32>
  return
}

// -----

func.func @case71(%a: tensor<1x3x4xf32>) {
  // expected-error @+1 {{result element type differs from the input's}}
  %0 = graph.pool avg %a {global} : (tensor<1x3x4xf32>) -> tensor<1x3x1xf16>
  return
}

// -----

func.func @case72(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'axis' 2 is out of range for rank 2}}
  %0 = graph.softmax %a {axis = 2 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case73(%a: tensor<3x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'axis' -3 is out of range for rank 2}}
  %0 = graph.layer_norm %a, %g {axis = -3 : i64} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case74(%a: tensor<3x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'epsilon' must be non-negative}}
  %0 = graph.layer_norm %a, %g {epsilon = -1.0 : f64} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case75(%a: tensor<3x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{scale/bias shape 3 does not broadcast to the normalized dimensions 4}}
  %0 = graph.rms_norm %a, %g : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case76(%a: tensor<3xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{input must have rank >= 2, got 1}}
  %0 = graph.batch_norm %a, %s, %s, %s, %s : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @case77(%a: tensor<1x4x2xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{scale, bias, mean and variance must be 1-D of the channel count 4}}
  %0 = graph.batch_norm %a, %s, %s, %s, %s : (tensor<1x4x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x4x2xf32>
  return
}

// -----

func.func @case78(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = graph.reduce sum %a {axes = array<i64: 2>} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case79(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{axis -1 is listed twice}}
  %0 = graph.reduce sum %a {axes = array<i64: 1, -1>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  return
}

// -----

func.func @case80(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'arg_max' needs exactly one axis}}
  %0 = graph.reduce arg_max %a : (tensor<3x4xf32>) -> tensor<1x1xi64>
  return
}

// -----

func.func @case80b(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{select_last_index applies to arg_max and arg_min, not 'sum'}}
  %0 = graph.reduce sum %a {axes = array<i64: 1>, select_last_index = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  return
}

// -----

func.func @case81(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{result element type 'i64' should be 'f32'}}
  %0 = graph.reduce max %a {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1xi64>
  return
}

// -----

func.func @case82(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape 3x1 does not match expected 3}}
  %0 = graph.reduce max %a {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  return
}

// -----

func.func @case83(%a: tensor<4xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{logits must be N x C (x D...), got rank 1}}
  %0 = graph.softmax_cross_entropy mean %a, %l : (tensor<4xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @case84(%a: tensor<4x3xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{labels must be i32 or i64 class indices, got 'f32'}}
  %0 = graph.softmax_cross_entropy mean %a, %l : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @case85(%a: tensor<4x3xf32>, %l: tensor<3xi64>) {
  // expected-error @+1 {{labels shape 3 should be 4}}
  %0 = graph.softmax_cross_entropy mean %a, %l : (tensor<4x3xf32>, tensor<3xi64>) -> tensor<f32>
  return
}

// -----

func.func @case86(%a: tensor<4x3xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{result element type must be the logits' 'f32'}}
  %0 = graph.softmax_cross_entropy mean %a, %l : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f16>
  return
}

// -----

func.func @case87(%a: tensor<4x3xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{result shape scalar does not match expected 4}}
  %0 = graph.softmax_cross_entropy none %a, %l : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @bn_stats0(%a: tensor<1x4x2xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{running statistics results need 'training'}}
  %0:3 = graph.batch_norm %a, %s, %s, %s, %s : (tensor<1x4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x2xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @bn_stats1(%a: tensor<1x4x2xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{yields the running mean and variance: 2 statistics results, got 1}}
  %0:2 = graph.batch_norm %a, %s, %s, %s, %s {training} : (tensor<1x4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x2xf32>, tensor<4xf32>)
  return
}

// -----

func.func @bn_stats2(%a: tensor<1x4x2xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{running statistics must be 1-D of the channel count 4}}
  %0:3 = graph.batch_norm %a, %s, %s, %s, %s {training} : (tensor<1x4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x2xf32>, tensor<4xf32>, tensor<3xf32>)
  return
}

// -----

func.func @flatten_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'axis' -3 is out of range for rank 2}}
  %0 = graph.flatten %a {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<1x6xf32>
  return
}

// -----

func.func @softmax_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'axis' -3 is out of range for rank 2}}
  %0 = graph.softmax %a {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @opaque_indices0(%a: tensor<2xf32>) {
  // expected-error @+1 {{'input_indices' has 2 entries for 1 values}}
  %0 = graph.opaque "Foo"(%a) {input_indices = array<i64: 0, 1>} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @opaque_indices1(%a: tensor<2xf32>) {
  // expected-error @+1 {{'input_indices' must be increasing and non-negative}}
  %0 = graph.opaque "Foo"(%a, %a) {input_indices = array<i64: 1, 1>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @opaque_indices2(%a: tensor<2xf32>) {
  // expected-error @+1 {{'output_indices' has 0 entries for 1 values}}
  %0 = graph.opaque "Foo"(%a) {output_indices = array<i64>} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @opaque_indices3(%a: tensor<2xf32>) {
  // expected-error @+1 {{'output_indices' must be increasing and non-negative}}
  %0 = graph.opaque "Foo"(%a) {output_indices = array<i64: -1>} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @iota_rank() {
  // expected-error @+1 {{result must be a static 1-D tensor, got 'tensor<2x4xi64>'}}
  %0 = graph.iota {start = 0 : i64, delta = 1 : i64} : tensor<2x4xi64>
  return
}

// -----

func.func @iota_dynamic() {
  // expected-error @+1 {{result must be a static 1-D tensor, got 'tensor<?xi64>'}}
  %0 = graph.iota {start = 0 : i64, delta = 1 : i64} : tensor<?xi64>
  return
}

// -----

func.func @iota_element() {
  // expected-error @+1 {{result element type must be integer or float, got 'complex<f32>'}}
  %0 = graph.iota {start = 0 : i64, delta = 1 : i64} : tensor<4xcomplex<f32>>
  return
}

// -----

func.func @iota_start_kind() {
  // expected-error @+1 {{'start' must be an integer attribute for result element type 'i64', got 5.000000e-01 : f32}}
  %0 = graph.iota {start = 0.5 : f32, delta = 1 : i64} : tensor<4xi64>
  return
}

// -----

func.func @iota_delta_kind() {
  // expected-error @+1 {{'delta' must be a float attribute for result element type 'f32', got 1 : i64}}
  %0 = graph.iota {start = 0.0 : f32, delta = 1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @iota_delta_zero() {
  // expected-error @+1 {{'delta' must be nonzero}}
  %0 = graph.iota {start = 0 : i64, delta = 0 : i64} : tensor<4xi64>
  return
}

// -----

func.func @fmod_kind(%a: tensor<4xi64>) {
  // expected-error @+1 {{'fmod' applies only to kind 'mod', not 'add'}}
  %0 = graph.binary add %a, %a {fmod} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// Sizes from hostile attributes are computed without overflow (issue 12:
// UBSan reported these verifiers).
func.func @pad_overflow(%a: tensor<4xf32>) {
  // expected-error @+1 {{'pads' make dimension 0 overflow int64}}
  %0 = graph.pad constant %a {pads = array<i64: 9223372036854775807, 9223372036854775807>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @slice_min_step(%a: tensor<4xf32>) {
  // expected-error @+1 {{result shape 4 does not match expected 1}}
  %0 = graph.slice %a {axes = array<i64: 0>, starts = array<i64: 3>, ends = array<i64: -9223372036854775808>, steps = array<i64: -9223372036854775808>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @conv_huge_stride(%x: tensor<1x2x8x8xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{result shape 1x2x6x6 does not match expected 1x2x2x1}}
  %0 = graph.conv %x, %w {strides = array<i64: 9223372036854775807, 9223372036854775807>, pads = array<i64: 9223372036854775807, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @case88(%a: tensor<3x3xf32>, %k: tensor<2xi64>) {
  // expected-error @+1 {{diagonal must be one integer, got 'tensor<2xi64>'}}
  %0 = graph.trilu %a, %k : (tensor<3x3xf32>, tensor<2xi64>) -> tensor<3x3xf32>
  return
}

// -----

func.func @case89(%a: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{indices must have the data's rank 2, got 1}}
  %0 = graph.gather_elements %a, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @case90(%a: tensor<3x4xf32>, %i: tensor<5x2xi64>) {
  // expected-error @+1 {{indices dimension 0 (5) is larger than the data's (3)}}
  %0 = graph.gather_elements %a, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  return
}

// -----

func.func @case91(%i: tensor<3x2xi64>, %g: tensor<3x5xf32>) {
  // expected-error @+1 {{with 'elements', indices 3x2 and gradient 3x5 must have one shape of the result's rank 2}}
  %0 = graph.scatter_add %i, %g {axis = 1 : i64, elements} : (tensor<3x2xi64>, tensor<3x5xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case92(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'axis' 2 is out of range for rank 2}}
  %0 = graph.cumsum %a {axis = 2 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case93(%a: tensor<f32>) {
  // expected-error @+1 {{operand must have rank >= 1, got a scalar}}
  %0 = graph.cumsum %a : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @case94(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from the operand's 'f32'}}
  %0 = graph.cumsum %a : (tensor<3x4xf32>) -> tensor<3x4xf16>
  return
}

// -----

func.func @case95(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape}}
  %0 = graph.cumsum %a : (tensor<3x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @case96(%a: tensor<3x4xf32>, %i: tensor<2x1xf32>) {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = graph.gather_nd %a, %i : (tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case97(%a: tensor<3x4xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{batch_dims 2 must be in [0, 2) (less than the rank of data and of indices)}}
  %0 = graph.gather_nd %a, %i {batch_dims = 2 : i64} : (tensor<3x4xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @case98(%a: tensor<3x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{the last dimension of indices (3) must be in [1, 2]: each index tuple addresses that many data dimensions after the batch_dims}}
  %0 = graph.gather_nd %a, %i : (tensor<3x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @case99(%a: tensor<3x4xf32>, %i: tensor<2x1xi64>) {
  // expected-error @+1 {{batch dimension 0 of indices (2) differs from the data's (3)}}
  %0 = graph.gather_nd %a, %i {batch_dims = 1 : i64} : (tensor<3x4xf32>, tensor<2x1xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @case100(%a: tensor<3x4xf32>, %i: tensor<2x1xi64>) {
  // expected-error @+1 {{result shape}}
  %0 = graph.gather_nd %a, %i : (tensor<3x4xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @case101(%a: tensor<3x4xf32>, %i: tensor<3x1xi64>, %u: tensor<3x1xf32>) {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = graph.scatter_elements none %a, %u, %u : (tensor<3x4xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case102(%a: tensor<3x4xf32>, %i: tensor<3xi64>, %u: tensor<3xf32>) {
  // expected-error @+1 {{indices must have the data's rank (at least 1), got 1 and 2}}
  %0 = graph.scatter_elements none %a, %i, %u : (tensor<3x4xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case103(%a: tensor<3x4xf32>, %i: tensor<3x1xi64>, %u: tensor<3x2xf32>) {
  // expected-error @+1 {{updates must have the indices' shape 3x1, got 3x2}}
  %0 = graph.scatter_elements none %a, %i, %u : (tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case104(%a: tensor<3x4xf32>, %i: tensor<3x1xi64>, %u: tensor<3x1xf32>) {
  // expected-error @+1 {{'axis' 2 is out of range for rank 2}}
  %0 = graph.scatter_elements add %a, %i, %u {axis = 2 : i64} : (tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x1xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case105(%a: tensor<3x4xf32>, %i: tensor<3x5xi64>, %u: tensor<3x5xf32>) {
  // expected-error @+1 {{indices dimension 1 (5) is larger than the data's (4)}}
  %0 = graph.scatter_elements add %a, %i, %u : (tensor<3x4xf32>, tensor<3x5xi64>, tensor<3x5xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case106(%a: tensor<3x4xf32>, %i: tensor<3x1xi64>, %u: tensor<3x1xf16>) {
  // expected-error @+1 {{updates element type 'f16' differs from the data's 'f32'}}
  %0 = graph.scatter_elements mul %a, %i, %u : (tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x1xf16>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case107(%a: tensor<3x4xf32>, %i: tensor<3x1xi64>, %u: tensor<3x1xf32>) {
  // expected-error @+1 {{result shape}}
  %0 = graph.scatter_elements min %a, %i, %u : (tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @case108(%a: tensor<3x4xf32>, %i: tensor<2x1xf32>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = graph.scatter_nd none %a, %i, %u : (tensor<3x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case109(%a: tensor<3x4xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) {
  // expected-error @+1 {{the last dimension of indices (3) must be in [1, 2]: each index tuple addresses that many data dimensions}}
  %0 = graph.scatter_nd none %a, %i, %u : (tensor<3x4xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case110(%a: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+1 {{updates must have shape 2x4 (the indices' shape without its last dimension, then the data's dimensions after the indexed ones), got 2x3}}
  %0 = graph.scatter_nd add %a, %i, %u : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case111(%a: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf16>) {
  // expected-error @+1 {{updates element type 'f16' differs from the data's 'f32'}}
  %0 = graph.scatter_nd mul %a, %i, %u : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf16>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case112(%a: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{result shape}}
  %0 = graph.scatter_nd max %a, %i, %u : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @case113(%a: tensor<f32>, %i: tensor<1xi64>, %u: tensor<f32>) {
  // expected-error @+1 {{data and indices must have rank >= 1, got 0 and 1}}
  %0 = graph.scatter_nd none %a, %i, %u : (tensor<f32>, tensor<1xi64>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @top_k_scalar(%a: tensor<f32>) {
  // expected-error @+1 {{operand must have rank >= 1, got a scalar}}
  %0:2 = graph.top_k %a {k = 1 : i64} : (tensor<f32>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

func.func @top_k_axis(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'axis' -3 is out of range for rank 2}}
  %0:2 = graph.top_k %a {axis = -3 : i64, k = 1 : i64} : (tensor<3x4xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  return
}

// -----

func.func @top_k_k_too_large(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{k 5 must be in [0, 4] (the operand's dimension 1)}}
  %0:2 = graph.top_k %a {k = 5 : i64} : (tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x5xi64>)
  return
}

// -----

func.func @top_k_k_negative(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{k -1 must be in [0, 3] (the operand's dimension 0)}}
  %0:2 = graph.top_k %a {axis = 0 : i64, k = -1 : i64} : (tensor<3x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xi64>)
  return
}

// -----

func.func @top_k_values_type(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from the operand's 'f32'}}
  %0:2 = graph.top_k %a {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf16>, tensor<3x2xi64>)
  return
}

// -----

func.func @top_k_indices_type(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{indices must be i64, got 'i32'}}
  %0:2 = graph.top_k %a {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi32>)
  return
}

// -----

func.func @top_k_values_shape(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape 3x4 does not match expected 3x2}}
  %0:2 = graph.top_k %a {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x2xi64>)
  return
}

// -----

func.func @top_k_indices_shape(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape 2x3 does not match expected 3x2}}
  %0:2 = graph.top_k %a {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<2x3xi64>)
  return
}
