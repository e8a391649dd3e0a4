// RUN: dist-opt %s --dist-autodiff="loss=mse:target optimizer=momentum nesterov=true weight-decay=0.01 accumulation-steps=4 mixed-precision=fp16 seed=5" | FileCheck %s --enable-var-scope --check-prefix=ACC
// RUN: dist-opt %s --dist-autodiff="loss=mse:target optimizer=adamw lr=0.001 weight-decay=0.1 mixed-precision=bf16" | FileCheck %s --enable-var-scope --check-prefix=BF16
// RUN: dist-opt %s --dist-autodiff="loss=mse:target optimizer=adam mixed-precision=fp16 dynamic-loss-scale=false loss-scale=1024" | FileCheck %s --enable-var-scope --check-prefix=STATIC

// Gradient accumulation with fp16 and dynamic loss scaling: the micro-batch
// seeds the backward with loss_scale / k and adds f32 gradients to the
// accumulators; apply unscales, skips an overflowed step, updates the scale
// and resets the accumulators.
// ACC-LABEL: func.func @train_microbatch(
// ACC-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {graph.name = "x"}, %{{.*}}: tensor<4x3xf32> {graph.name = "target"})
// ACC-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<8x16xf32> {graph.update = "w1.grad_acc"}, tensor<16x3xf32> {graph.update = "w2.grad_acc"}, tensor<f32> {graph.update = "microbatch"})
// ACC-SAME: graph.train = {accumulation_steps = 4 : i64, dynamic_loss_scale = true, loss_scale = 6.553600e+04 : f64, lr = 1.000000e-02 : f64, mixed_precision = "fp16", optimizer = "momentum", role = "microbatch"}
// The dropout mask is keyed by the optimizer step and the micro-batch
// index (f32 counters, not lowered to fp16); the index advances per
// micro-batch and apply resets it.
// ACC: %[[STEP0:.*]] = graph.state "step" {graph.phase = "forward"} : tensor<f32>
// ACC: %[[MB:.*]] = graph.state "microbatch" {graph.phase = "forward"} : tensor<f32>
// ACC: %[[XL:.*]] = graph.cast %[[X]] {graph.phase = "forward"} : (tensor<4x8xf32>) -> tensor<4x8xf16>
// ACC: %[[W1:.*]] = graph.weight "w1" {graph.phase = "forward"} : tensor<8x16xf32>
// ACC: %[[W1L:.*]] = graph.cast %[[W1]] {graph.phase = "forward"} : (tensor<8x16xf32>) -> tensor<8x16xf16>
// ACC: %[[MASK:.*]] = graph.dropout_mask step(%[[STEP0]] : tensor<f32>) microbatch(%[[MB]] : tensor<f32>) {graph.phase = "forward", ratio = 1.000000e-01 : f64, seed = 5 : i64} : tensor<4x16xf16>
// ACC: graph.cast %{{.*}} : (tensor<4x3xf16>) -> tensor<4x3xf32>
// ACC: %[[S:.*]] = graph.state "loss_scale" {graph.phase = "backward_input", init = 6.553600e+04 : f64} : tensor<f32>
// ACC: %[[K:.*]] = graph.constant dense<2.500000e-01> : tensor<f32>
// ACC: graph.binary mul %[[S]], %[[K]]
// ACC: graph.binary mul %{{.*}}, %[[MASK]] {graph.phase = "backward_input"}
// ACC: %[[G1:.*]] = graph.matmul %[[XL]], %{{.*}} {graph.phase = "backward_weight", transpose_lhs = true} : (tensor<4x8xf16>, tensor<4x16xf16>) -> tensor<8x16xf16>
// ACC: %[[G1F:.*]] = graph.cast %[[G1]] {graph.phase = "backward_weight"} : (tensor<8x16xf16>) -> tensor<8x16xf32>
// ACC: %[[A1:.*]] = graph.state "w1.grad_acc" {graph.phase = "backward_weight"} : tensor<8x16xf32>
// ACC: %[[N1:.*]] = graph.binary add %[[A1]], %[[G1F]]
// ACC: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<f32> {graph.phase = "forward"}
// ACC: %[[MBN:.*]] = graph.binary add %[[MB]], %[[ONE]] {graph.phase = "forward"}
// ACC: return %{{.*}}, %[[N1]], %{{.*}}, %[[MBN]] :
// ACC-LABEL: func.func @train_apply()
// ACC-SAME: -> (tensor<8x16xf32> {graph.update = "w1"}, tensor<8x16xf32> {graph.update = "w1.momentum"}, tensor<16x3xf32> {graph.update = "w2"}, tensor<16x3xf32> {graph.update = "w2.momentum"}, tensor<f32> {graph.update = "step"}, tensor<f32> {graph.update = "loss_scale"}, tensor<f32> {graph.update = "loss_scale.good_steps"}, tensor<8x16xf32> {graph.update = "w1.grad_acc"}, tensor<16x3xf32> {graph.update = "w2.grad_acc"}, tensor<f32> {graph.update = "microbatch"})
// ACC: %[[AW1:.*]] = graph.weight "w1" {graph.phase = "optimizer"}
// ACC: %[[ACC1:.*]] = graph.state "w1.grad_acc"
// ACC: %[[SC:.*]] = graph.state "loss_scale"
// ACC: %[[U:.*]]:3 = graph.unscale %[[SC]], %[[ACC1]], %{{.*}} {graph.phase = "optimizer"}
// ACC: %[[STEP:.*]] = graph.state "step"
// ACC: %[[INC:.*]] = graph.binary add %[[STEP]]
// ACC: %[[NEXT:.*]] = graph.where %[[U]]#2, %[[STEP]], %[[INC]]
// ACC: %[[M1:.*]] = graph.state "w1.momentum"
// ACC: graph.sgd_update %[[AW1]], %[[U]]#0, %[[NEXT]], %[[M1]] skip %[[U]]#2 {graph.phase = "optimizer", lr = 1.000000e-02 : f64, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-02 : f64}
// ACC: graph.loss_scale_update %[[SC]], %{{.*}}, %[[U]]#2
// ACC: graph.constant dense<0.000000e+00> : tensor<8x16xf32>
// ACC: graph.constant dense<0.000000e+00> : tensor<f32> {graph.phase = "optimizer"}

// bf16: no loss scaling, AdamW with decoupled decay.
// BF16-LABEL: func.func @train_step(
// BF16: %[[STEP:.*]] = graph.state "step" {graph.phase = "forward"} : tensor<f32>
// BF16-NOT: graph.state "microbatch"
// BF16: graph.dropout_mask step(%[[STEP]] : tensor<f32>) {graph.phase = "forward", ratio = 1.000000e-01 : f64} : tensor<4x16xbf16>
// BF16: graph.matmul {{.*}} -> tensor<4x16xbf16>
// BF16-NOT: graph.unscale
// BF16: graph.adam_update %{{.*}} {decoupled, graph.phase = "optimizer", lr = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<8x16xf32>,

// Static loss scale: a constant seed, unscale with a constant, skip on overflow.
// STATIC-LABEL: func.func @train_step(
// STATIC: graph.constant dense<1.024000e+03> : tensor<f32> {graph.phase = "backward_input"}
// STATIC: %[[C:.*]] = graph.constant dense<1.024000e+03> : tensor<f32> {graph.phase = "optimizer"}
// STATIC: %[[U:.*]]:3 = graph.unscale %[[C]]
// STATIC: graph.adam_update {{.*}} skip %[[U]]#2
// STATIC-NOT: graph.loss_scale_update

func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}) -> tensor<4x3xf32> {
  %w1 = graph.weight "w1" : tensor<8x16xf32>
  %w2 = graph.weight "w2" : tensor<16x3xf32>
  %h = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = graph.unary gelu %h : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %d = graph.dropout %a {ratio = 0.1 : f64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = graph.matmul %d, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
