// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-autodiff
// RUN: not dist-opt %s --split-input-file --dist-autodiff="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not dist-opt %s --split-input-file --dist-autodiff="mixed-precision=fp8" 2>&1 | FileCheck %s --check-prefix=MP
// RUN: not dist-opt %s --split-input-file --dist-autodiff="accumulation-steps=0" 2>&1 | FileCheck %s --check-prefix=ACC
// RUN: not dist-opt %s --split-input-file --dist-autodiff="func=fwd" 2>&1 | FileCheck %s --check-prefix=FUNC
// RUN: not dist-opt %s --split-input-file --dist-autodiff="loss=hinge:y" 2>&1 | FileCheck %s --check-prefix=LOSS

// OPT: dist-autodiff: unknown optimizer 'lamb'; use sgd, momentum, adam or adamw
// MP: dist-autodiff: unknown mixed-precision 'fp8'; use none, bf16 or fp16
// ACC: dist-autodiff: accumulation-steps must be at least 1, got 0
// FUNC: dist-autodiff: no function '@fwd' with a body to differentiate; name it with func=
// LOSS: bad loss 'hinge:y': expected softmax-cross-entropy:LABEL_INPUT or mse:TARGET_INPUT

// An opaque op between the weights and the loss is named.
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<4xf32>
  %y = graph.binary mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'graph.opaque' op (ONNX 'Hardmax') is opaque and not differentiable, but it lies on the path from the weights to the loss}}
  %h = graph.opaque "Hardmax"(%y) : (tensor<4xf32>) -> tensor<4xf32>
  %l = graph.reduce sum %h {keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An opaque op off that path (on the input only) is fine.
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<4xf32>
  %h = graph.opaque "Hardmax"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.binary mul %h, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = graph.reduce sum %y {keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Reflect padding longer than the axis minus one has no gradient rule.
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<4xf32>
  %y = graph.binary mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{autodiff supports 'reflect' padding with non-negative pads up to 3 only (axis 0 pads 4); pad in steps or keep it off the path from the weights to the loss}}
  %p = graph.pad reflect %y {pads = array<i64: 1, 4>} : (tensor<4xf32>) -> tensor<9xf32>
  %l = graph.reduce sum %p {keepdims = false} : (tensor<9xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Edge padding that crops has no gradient rule.
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<4xf32>
  %y = graph.binary mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{autodiff supports 'edge' padding with non-negative pads only (axis 0 pads -1)}}
  %p = graph.pad edge %y {pads = array<i64: 2, -1>} : (tensor<4xf32>) -> tensor<5xf32>
  %l = graph.reduce sum %p {keepdims = false} : (tensor<5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----


// expected-error @+1 {{'main' returns no scalar loss; add one with the option loss=softmax-cross-entropy:LABEL_INPUT or mse:TARGET_INPUT}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.weight "w" : tensor<4xf32>
  %y = graph.binary mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<4xf32>
  // expected-error @+1 {{the loss does not depend on any float graph.weight: nothing to train}}
  %l = graph.reduce sum %x {keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----


func.func @main(%x: tensor<?x4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<4xf32>
  // expected-error @+1 {{'graph.binary' op has the dynamic type 'tensor<?x4xf32>'; dist-autodiff needs static shapes: pin the inputs with --input-shape=NAME:D0xD1... (or --default-batch)}}
  %y = graph.binary mul %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %l = graph.reduce sum %y {keepdims = false} : (tensor<?x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A ring attention (dist-context-parallel) gives its mask no gradient: a
// mask computed from a trained weight is refused.
func.func @main(%q: tensor<1x4x4xf32>) -> tensor<f32> {
  %w = graph.weight "bias" : tensor<1x4x8xf32>
  // expected-error @+1 {{'dist.ring_attention' op has a mask computed from trained weights, which gets no gradient through the ring}}
  %o, %lse = dist.ring_attention %q, %q, %q mask %w scale 1.0 over [0, 1] : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x8xf32> -> tensor<1x4x4xf32>, tensor<1x4xf32>
  %l = graph.reduce sum %o {keepdims = false} : (tensor<1x4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The ring's log-sum-exp is not differentiable.
func.func @main(%x: tensor<1x4x4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<1x4x4xf32>
  %q = graph.binary mul %x, %w : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  // expected-error @+1 {{'dist.ring_attention' op has its log-sum-exp on the path to the loss; only its result is differentiable}}
  %o, %lse = dist.ring_attention %q, %q, %q scale 1.0 over [0, 1] : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32> -> tensor<1x4x4xf32>, tensor<1x4xf32>
  %l = graph.reduce sum %lse {keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
