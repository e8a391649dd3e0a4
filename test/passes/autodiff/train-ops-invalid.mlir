// RUN: dist-opt %s --split-input-file --verify-diagnostics

func.func @state_empty() -> tensor<2xf32> {
  // expected-error @+1 {{needs a non-empty name}}
  %0 = graph.state "" : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @state_dynamic() -> tensor<?xf32> {
  // expected-error @+1 {{state buffers need a static shape}}
  %0 = graph.state "s" : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @mask_ratio() -> tensor<2xf32> {
  // expected-error @+1 {{'ratio' must be in [0, 1), got 1}}
  %0 = graph.dropout_mask {ratio = 1.0 : f64} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @mask_int() -> tensor<2xi32> {
  // expected-error @+1 {{'result' must have a float element type}}
  %0 = graph.dropout_mask {ratio = 0.5 : f64} : tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @mask_step_type(%s: tensor<1xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'step' must be a tensor<f32> counter, got 'tensor<1xf32>'}}
  %0 = graph.dropout_mask step(%s : tensor<1xf32>) {ratio = 0.5 : f64} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @mask_microbatch_type(%s: tensor<f32>, %m: tensor<i64>) -> tensor<2xf32> {
  // expected-error @+1 {{'microbatch' must be a tensor<f32> counter, got 'tensor<i64>'}}
  %0 = graph.dropout_mask step(%s : tensor<f32>) microbatch(%m : tensor<i64>) {ratio = 0.5 : f64} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @mask_microbatch_without_step(%m: tensor<f32>) -> tensor<2xf32> {
  // expected-error @+1 {{a 'microbatch' index needs a 'step' counter}}
  %0 = graph.dropout_mask microbatch(%m : tensor<f32>) {ratio = 0.5 : f64} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @unary_not(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'not' has no gradient}}
  %0 = graph.unary_grad not %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @unary_shape(%x: tensor<2xf32>, %d: tensor<3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'input' ('tensor<2xf32>') and 'grad' ('tensor<3xf32>') must have the same type}}
  %0 = graph.unary_grad relu %x, %d : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @softmax_axis(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'axis' 3 is out of range for rank 1}}
  %0 = graph.softmax_grad %x, %x {axis = 3 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @sce_labels(%l: tensor<4x3xf32>, %y: tensor<4xf32>, %g: tensor<f32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{labels must be i32 or i64}}
  %0 = graph.softmax_cross_entropy_grad mean %l, %y, %g : (tensor<4x3xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @sce_grad(%l: tensor<4x3xf32>, %y: tensor<4xi64>, %g: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'grad' must have the loss's shape scalar}}
  %0 = graph.softmax_cross_entropy_grad mean %l, %y, %g : (tensor<4x3xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @sce_rank(%l: tensor<4xf32>, %y: tensor<4xi64>, %g: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{logits must be N x C x ..., got rank 1}}
  %0 = graph.softmax_cross_entropy_grad mean %l, %y, %g : (tensor<4xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sce_label_shape(%l: tensor<4x3xf32>, %y: tensor<5xi64>, %g: tensor<f32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{labels shape 5 must be 4}}
  %0 = graph.softmax_cross_entropy_grad mean %l, %y, %g : (tensor<4x3xf32>, tensor<5xi64>, tensor<f32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @norm_kind(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'kind' must be "layer", "rms" or "batch", got "group"}}
  %0 = graph.norm_grad %x, %g, %x {kind = "group"} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{scale shape 4 does not broadcast to the normalized shape 8}}
  %0 = graph.norm_grad %x, %g, %x {kind = "layer"} : (tensor<2x8xf32>, tensor<4xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'axis' 2 is out of range for rank 2}}
  %0 = graph.norm_grad %x, %g, %x {kind = "rms", axis = 2 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @norm_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'epsilon' must be non-negative}}
  %0 = graph.norm_grad %x, %g, %x {kind = "layer", epsilon = -1.0 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @bn_rank(%x: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{batch normalization needs rank >= 2, got 1}}
  %0 = graph.norm_grad %x, %g, %x {kind = "batch"} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @params_count(%x: tensor<2x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{1 or 2 results), got 3}}
  %0:3 = graph.norm_grad_params %x, %x {kind = "layer"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#0 : tensor<8xf32>
}

// -----

func.func @params_shape(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{results must have shape 8 and the input's element type}}
  %0 = graph.norm_grad_params %x, %x {kind = "layer"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @conv_rank(%dy: tensor<2x4x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{must all be rank >= 3 of the same rank}}
  %0 = graph.conv_grad_input %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}

// -----

func.func @conv_window(%dy: tensor<2x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{needs 2 strides and dilations and 4 pads}}
  %0 = graph.conv_grad_input %dy, %w {strides = array<i64: 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}

// -----

func.func @conv_out(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{gradient shape 2x4x6x6 is not the forward output shape 2x4x8x8}}
  %0 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

func.func @conv_group(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{'group' must be positive}}
  %0 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 0 : i64} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

func.func @conv_channels(%x: tensor<2x6x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{input has 6 channels but weight expects 3 x group 1}}
  %0 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x6x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

// An ONNX ConvTranspose of 4 input channels in 3 groups: the forward conv's
// 4 filters do not split into the groups.
func.func @conv_filters_group(%dy: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x6x7x7xf32> {
  // expected-error @+1 {{filter count 4 is not divisible by group 3}}
  %0 = graph.conv_grad_input %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x6x7x7xf32>
  return %0 : tensor<1x6x7x7xf32>
}

// -----

func.func @conv_types(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x8x8xbf16>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{element types must match}}
  %0 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xbf16>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

func.func @pool_l2(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{'l2' pooling has no gradient op}}
  %0 = graph.pool_grad l2 %x, %dy {global} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @pool_global(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{global pooling takes no window attributes}}
  %0 = graph.pool_grad avg %x, %dy {global, kernel = array<i64: 4, 4>} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @pool_window(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{needs 2 kernel, stride and dilation entries and 4 pads}}
  %0 = graph.pool_grad max %x, %dy {kernel = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// Zero strides and dilations are refused before any window arithmetic
// divides by them (issue 12: these verifiers once trapped with SIGFPE).
func.func @conv_input_zero_stride(%dy: tensor<2x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{strides and dilations must be positive}}
  %0 = graph.conv_grad_input %dy, %w {strides = array<i64: 0, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}

// -----

func.func @conv_weight_zero_stride(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{strides and dilations must be positive}}
  %0 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 0>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

func.func @conv_weight_negative_pad(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{pads must be non-negative}}
  %0 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, -1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

func.func @pool_zero_stride(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{strides and dilations must be positive}}
  %0 = graph.pool_grad max %x, %dy {kernel = array<i64: 2, 2>, strides = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @pool_zero_dilation(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{strides and dilations must be positive}}
  %0 = graph.pool_grad max %x, %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @pool_zero_kernel(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{'kernel' entries must be positive}}
  %0 = graph.pool_grad max %x, %dy {kernel = array<i64: 0, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @pool_out(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x3x3xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{gradient shape 1x2x3x3 is not the forward output shape 1x2x2x2}}
  %0 = graph.pool_grad max %x, %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @pool_rank(%x: tensor<2x4xf32>, %dy: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{input must be N x C x spatial..., got rank 2}}
  %0 = graph.pool_grad avg %x, %dy {global} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @scatter_idx(%i: tensor<3xf32>, %d: tensor<3x8xf32>) -> tensor<10x8xf32> {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = graph.scatter_add %i, %d : (tensor<3xf32>, tensor<3x8xf32>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

func.func @scatter_shape(%i: tensor<3xi64>, %d: tensor<4x8xf32>) -> tensor<10x8xf32> {
  // expected-error @+1 {{gradient shape 4x8 must be 3x8}}
  %0 = graph.scatter_add %i, %d : (tensor<3xi64>, tensor<4x8xf32>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

func.func @scatter_axis(%i: tensor<3xi64>, %d: tensor<3x8xf32>) -> tensor<10x8xf32> {
  // expected-error @+1 {{'axis' 2 is out of range for rank 2}}
  %0 = graph.scatter_add %i, %d {axis = 2 : i64} : (tensor<3xi64>, tensor<3x8xf32>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

func.func @scatter_type(%i: tensor<3xi64>, %d: tensor<3x8xbf16>) -> tensor<10x8xf32> {
  // expected-error @+1 {{gradient and result element types must match}}
  %0 = graph.scatter_add %i, %d : (tensor<3xi64>, tensor<3x8xbf16>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

func.func @unscale_scale(%s: tensor<1xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'scale' must be a tensor<f32> scalar}}
  %0:2 = graph.unscale %s, %g : (tensor<1xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<i1>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @unscale_count(%s: tensor<f32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected 2 results, got 1}}
  %0 = graph.unscale %s, %g : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unscale_f32(%s: tensor<f32>, %g: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{must be f32 of the same shape}}
  %0:2 = graph.unscale %s, %g : (tensor<f32>, tensor<4xbf16>) -> (tensor<4xbf16>, tensor<i1>)
  return %0#0 : tensor<4xbf16>
}

// -----

func.func @unscale_flag(%s: tensor<f32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'found_inf' must be a tensor<i1> scalar}}
  %0:2 = graph.unscale %s, %g : (tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @scale_update(%s: tensor<f32>, %b: tensor<i1>) -> tensor<f32> {
  // expected-error @+1 {{needs growth_factor >= 1, 0 < backoff_factor < 1 and growth_interval >= 1}}
  %0:2 = graph.loss_scale_update %s, %s, %b {backoff_factor = 2.0 : f64} : (tensor<f32>, tensor<f32>, tensor<i1>) -> (tensor<f32>, tensor<f32>)
  return %0#0 : tensor<f32>
}

// -----

func.func @scale_update_flag(%s: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'found_inf' must be a tensor<i1> scalar}}
  %0:2 = graph.loss_scale_update %s, %s, %s : (tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %0#0 : tensor<f32>
}

// -----

func.func @sgd_grad(%w: tensor<4xf32>, %g: tensor<4xbf16>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{gradient 'tensor<4xbf16>' must have the parameter's type 'tensor<4xf32>'; cast or unscale it first}}
  %0 = graph.sgd_update %w, %g, %t {lr = 0.1 : f64} : (tensor<4xf32>, tensor<4xbf16>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_momentum(%w: tensor<4xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{momentum 9.000000e-01 needs a momentum_buf operand}}
  %0 = graph.sgd_update %w, %w, %t {lr = 0.1 : f64, momentum = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_nesterov(%w: tensor<4xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{nesterov needs momentum and a momentum_buf operand}}
  %0 = graph.sgd_update %w, %w, %t {lr = 0.1 : f64, nesterov} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_results(%w: tensor<4xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{yields the parameter and the momentum buffer: expected 2 results, got 1}}
  %0 = graph.sgd_update %w, %w, %t, %w {lr = 0.1 : f64, momentum = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_lr(%w: tensor<4xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lr' must be non-negative, got -1}}
  %0 = graph.sgd_update %w, %w, %t {lr = -1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_step(%w: tensor<4xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'step' must be a tensor<f32> scalar}}
  %0 = graph.sgd_update %w, %w, %t {lr = 0.1 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @adam_betas(%w: tensor<4xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{betas must be in [0, 1), got 1.000000e+00, 9.990000e-01}}
  %0:3 = graph.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f64, beta1 = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @adam_state(%w: tensor<4xf32>, %m: tensor<5xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'param' ('tensor<4xf32>') and 'exp_avg' ('tensor<5xf32>') must have the same type}}
  %0:3 = graph.adam_update %w, %w, %m, %w, %t {lr = 0.1 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<5xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @adam_skip(%w: tensor<4xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'skip' must be a tensor<i1> scalar}}
  %0:3 = graph.adam_update %w, %w, %w, %w, %t skip %t {lr = 0.1 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}
