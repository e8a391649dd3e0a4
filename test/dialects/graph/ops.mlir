// RUN: dist-opt %s | dist-opt | FileCheck %s --enable-var-scope
// RUN: dist-opt %s --mlir-print-op-generic | dist-opt | FileCheck %s --enable-var-scope

// CHECK-LABEL: func.func @data
func.func @data() -> (tensor<4x8xf32>, tensor<8xf32>, tensor<2xi64>) {
  // CHECK: %[[W:.*]] = graph.weight "w" {file = "m.onnx", offset = 64 : i64, size = 128 : i64} : tensor<4x8xf32>
  %w = graph.weight "w" {file = "m.onnx", offset = 64 : i64, size = 128 : i64} : tensor<4x8xf32>
  // CHECK: %[[G:.*]] = graph.weight "g" : tensor<8xf32>
  %g = graph.weight "g" : tensor<8xf32>
  // CHECK: %[[C:.*]] = graph.constant dense<[2, 4]> : tensor<2xi64>
  %c = graph.constant dense<[2, 4]> : tensor<2xi64>
  // CHECK: return %[[W]], %[[G]], %[[C]]
  return %w, %g, %c : tensor<4x8xf32>, tensor<8xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @opaque
func.func @opaque(%a: tensor<1x100x4xf32>, %b: tensor<1x1x100xf32>) -> tensor<10x3xi64> {
  // CHECK: graph.opaque "NonMaxSuppression"(%{{.*}}, %{{.*}}) {attrs = {center_point_box = 0 : i64}, domain = "ai.onnx"} : (tensor<1x100x4xf32>, tensor<1x1x100xf32>) -> tensor<10x3xi64>
  %0 = graph.opaque "NonMaxSuppression"(%a, %b) {attrs = {center_point_box = 0 : i64}, domain = "ai.onnx"} : (tensor<1x100x4xf32>, tensor<1x1x100xf32>) -> tensor<10x3xi64>
  // CHECK: graph.opaque "GRU"(%{{.*}}) {input_indices = array<i64: 0>, output_indices = array<i64: 1>} : (tensor<1x100x4xf32>) -> tensor<10x3xi64>
  %1 = graph.opaque "GRU"(%a) {input_indices = array<i64: 0>, output_indices = array<i64: 1>} : (tensor<1x100x4xf32>) -> tensor<10x3xi64>
  return %0 : tensor<10x3xi64>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<2x8x768xf32>, %w: tensor<3072x768xf32>, %b: tensor<3072xf32>,
                  %v: tensor<768xf32>, %k: tensor<12x64x8xf32>, %q: tensor<2x12x8x64xf32>)
    -> (tensor<2x8x3072xf32>, tensor<2x8xf32>, tensor<2x12x8x8xf32>) {
  // CHECK: graph.matmul %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f64, transpose_rhs = true} : (tensor<2x8x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<2x8x3072xf32>
  %0 = graph.matmul %x, %w, %b {transpose_rhs = true, alpha = 0.5 : f64} : (tensor<2x8x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<2x8x3072xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8xf32>
  %1 = graph.matmul %x, %v : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8xf32>
  // CHECK: graph.matmul {{.*}} -> tensor<2x12x8x8xf32>
  %2 = graph.matmul %q, %k : (tensor<2x12x8x64xf32>, tensor<12x64x8xf32>) -> tensor<2x12x8x8xf32>
  return %0, %1, %2 : tensor<2x8x3072xf32>, tensor<2x8xf32>, tensor<2x12x8x8xf32>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x8xf32>, %y: tensor<8xf32>, %m: tensor<1x8xi1>, %i: tensor<2x8xi64>) {
  // CHECK: graph.unary gelu %{{.*}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %0 = graph.unary gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.unary leaky_relu %{{.*}} {alpha = 1.000000e-01 : f64}
  %1 = graph.unary leaky_relu %x {alpha = 0.1 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.unary is_nan %{{.*}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %2 = graph.unary is_nan %x : (tensor<2x8xf32>) -> tensor<2x8xi1>
  // CHECK: graph.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
  %3 = graph.clip %x {min = 0.0 : f64, max = 6.0 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.binary add %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %4 = graph.binary add %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.binary less %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %5 = graph.binary less %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK: graph.binary and %{{.*}}, %{{.*}} : (tensor<2x8xi1>, tensor<1x8xi1>) -> tensor<2x8xi1>
  %6 = graph.binary and %5, %m : (tensor<2x8xi1>, tensor<1x8xi1>) -> tensor<2x8xi1>
  // CHECK: graph.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %7 = graph.where %m, %x, %y : (tensor<1x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.cast %{{.*}} : (tensor<2x8xi64>) -> tensor<2x8xf32>
  %8 = graph.cast %i : (tensor<2x8xi64>) -> tensor<2x8xf32>
  // CHECK: graph.dropout %{{.*}} {ratio = 1.000000e-01 : f64}
  %9 = graph.dropout %x {ratio = 0.1 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.binary pow %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<i64>) -> tensor<2x8xf32>
  %e = graph.constant dense<2> : tensor<i64>
  %10 = graph.binary pow %x, %e : (tensor<2x8xf32>, tensor<i64>) -> tensor<2x8xf32>
  return
}

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<2x8x2304xf32>, %ids: tensor<2x8xi64>, %t: tensor<50x16xf32>,
                    %i: tensor<i64>, %m: tensor<1x1x8x8xi1>, %img: tensor<1x3x4x4xf32>,
                    %e: tensor<2x3x2304xi64>, %nd: tensor<2x3x1xi64>,
                    %nd2: tensor<3x2xi64>) {
  // CHECK: graph.reshape %{{.*}} : (tensor<2x8x2304xf32>) -> tensor<2x8x3x768xf32>
  %0 = graph.reshape %x : (tensor<2x8x2304xf32>) -> tensor<2x8x3x768xf32>
  // CHECK: graph.flatten %{{.*}} {axis = 2 : i64} : (tensor<2x8x2304xf32>) -> tensor<16x2304xf32>
  %1 = graph.flatten %x {axis = 2 : i64} : (tensor<2x8x2304xf32>) -> tensor<16x2304xf32>
  // CHECK: graph.flatten %{{.*}} {axis = -1 : i64} : (tensor<2x8x2304xf32>) -> tensor<16x2304xf32>
  %f = graph.flatten %x {axis = -1 : i64} : (tensor<2x8x2304xf32>) -> tensor<16x2304xf32>
  // CHECK: graph.transpose %{{.*}} {perm = array<i64: 1, 0, 2>} : (tensor<2x8x2304xf32>) -> tensor<8x2x2304xf32>
  %2 = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x8x2304xf32>) -> tensor<8x2x2304xf32>
  // CHECK: %{{.*}}:3 = graph.split %{{.*}} {axis = -1 : i64}
  %3:3 = graph.split %x {axis = -1 : i64} : (tensor<2x8x2304xf32>) -> (tensor<2x8x768xf32>, tensor<2x8x768xf32>, tensor<2x8x768xf32>)
  // CHECK: graph.slice %{{.*}} {axes = array<i64: 2>, ends = array<i64: 2304>, starts = array<i64: 768>, steps = array<i64: 2>} : (tensor<2x8x2304xf32>) -> tensor<2x8x768xf32>
  %4 = graph.slice %x {axes = array<i64: 2>, starts = array<i64: 768>, ends = array<i64: 2304>, steps = array<i64: 2>} : (tensor<2x8x2304xf32>) -> tensor<2x8x768xf32>
  // CHECK: graph.slice {{.*}} -> tensor<2x3x2304xf32>
  %5 = graph.slice %x {axes = array<i64: -2>, starts = array<i64: -1>, ends = array<i64: -100>, steps = array<i64: -3>} : (tensor<2x8x2304xf32>) -> tensor<2x3x2304xf32>
  // CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x8x768xf32>, tensor<2x8x2304xf32>) -> tensor<2x8x3072xf32>
  %6 = graph.concat %4, %x {axis = 2 : i64} : (tensor<2x8x768xf32>, tensor<2x8x2304xf32>) -> tensor<2x8x3072xf32>
  // CHECK: graph.expand %{{.*}} : (tensor<1x1x8x8xi1>) -> tensor<2x12x8x8xi1>
  %7 = graph.expand %m : (tensor<1x1x8x8xi1>) -> tensor<2x12x8x8xi1>
  // CHECK: graph.pad reflect %{{.*}} {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 2>, value = 1.000000e+00 : f64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x7xf32>
  %8 = graph.pad reflect %img {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 2>, value = 1.0 : f64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x7xf32>
  // CHECK: graph.trilu %{{.*}} {k = 1 : i64, upper = false} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
  %9 = graph.trilu %m {upper = false, k = 1 : i64} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
  // CHECK: graph.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x8x2304xf32>, tensor<i64>) -> tensor<2x2304xf32>
  %10 = graph.gather %x, %i {axis = 1 : i64} : (tensor<2x8x2304xf32>, tensor<i64>) -> tensor<2x2304xf32>
  // CHECK: graph.embedding %{{.*}}, %{{.*}} : (tensor<50x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %11 = graph.embedding %t, %ids : (tensor<50x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  // CHECK: graph.trilu %{{.*}}, %{{.*}} {upper = false} : (tensor<1x1x8x8xi1>, tensor<i64>) -> tensor<1x1x8x8xi1>
  %12 = graph.trilu %m, %i {upper = false} : (tensor<1x1x8x8xi1>, tensor<i64>) -> tensor<1x1x8x8xi1>
  // CHECK: graph.gather_elements %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x8x2304xf32>, tensor<2x3x2304xi64>) -> tensor<2x3x2304xf32>
  %13 = graph.gather_elements %x, %e {axis = 1 : i64} : (tensor<2x8x2304xf32>, tensor<2x3x2304xi64>) -> tensor<2x3x2304xf32>
  // CHECK: graph.cumsum %{{.*}} {axis = -1 : i64, exclusive = true, reverse = true} : (tensor<2x8xi64>) -> tensor<2x8xi64>
  %14 = graph.cumsum %ids {axis = -1 : i64, exclusive = true, reverse = true} : (tensor<2x8xi64>) -> tensor<2x8xi64>
  // CHECK: graph.cumsum %{{.*}} : (tensor<2x8x2304xf32>) -> tensor<2x8x2304xf32>
  %15 = graph.cumsum %x : (tensor<2x8x2304xf32>) -> tensor<2x8x2304xf32>
  // CHECK: %{{.*}}, %{{.*}} = graph.top_k %{{.*}} {k = 2 : i64} : (tensor<2x8x2304xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi64>)
  %v, %vi = graph.top_k %x {k = 2 : i64} : (tensor<2x8x2304xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi64>)
  // CHECK: graph.top_k %{{.*}} {axis = 1 : i64, k = 0 : i64, largest = false, sorted = false} : (tensor<2x8xi64>) -> (tensor<2x0xi64>, tensor<2x0xi64>)
  %w, %wi = graph.top_k %ids {axis = 1 : i64, k = 0 : i64, largest = false, sorted = false} : (tensor<2x8xi64>) -> (tensor<2x0xi64>, tensor<2x0xi64>)
  // CHECK: graph.gather_nd %{{.*}}, %{{.*}} {batch_dims = 1 : i64} : (tensor<2x8x2304xf32>, tensor<2x3x1xi64>) -> tensor<2x3x2304xf32>
  %16 = graph.gather_nd %x, %nd {batch_dims = 1 : i64} : (tensor<2x8x2304xf32>, tensor<2x3x1xi64>) -> tensor<2x3x2304xf32>
  // CHECK: graph.gather_nd %{{.*}}, %{{.*}} : (tensor<2x8x2304xf32>, tensor<3x2xi64>) -> tensor<3x2304xf32>
  %17 = graph.gather_nd %x, %nd2 : (tensor<2x8x2304xf32>, tensor<3x2xi64>) -> tensor<3x2304xf32>
  // CHECK: graph.scatter_elements max %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x8x2304xf32>, tensor<2x3x2304xi64>, tensor<2x3x2304xf32>) -> tensor<2x8x2304xf32>
  %18 = graph.scatter_elements max %x, %e, %13 {axis = 1 : i64} : (tensor<2x8x2304xf32>, tensor<2x3x2304xi64>, tensor<2x3x2304xf32>) -> tensor<2x8x2304xf32>
  // CHECK: graph.scatter_elements none %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x2304xf32>, tensor<2x3x2304xi64>, tensor<2x3x2304xf32>) -> tensor<2x8x2304xf32>
  %19 = graph.scatter_elements none %x, %e, %13 : (tensor<2x8x2304xf32>, tensor<2x3x2304xi64>, tensor<2x3x2304xf32>) -> tensor<2x8x2304xf32>
  // CHECK: graph.scatter_nd add %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x2304xf32>, tensor<3x2xi64>, tensor<3x2304xf32>) -> tensor<2x8x2304xf32>
  %20 = graph.scatter_nd add %x, %nd2, %17 : (tensor<2x8x2304xf32>, tensor<3x2xi64>, tensor<3x2304xf32>) -> tensor<2x8x2304xf32>
  return
}

// CHECK-LABEL: func.func @nn
func.func @nn(%img: tensor<1x3x224x224xf32>, %w: tensor<64x3x7x7xf32>, %b: tensor<64xf32>,
              %x: tensor<2x8x768xf32>, %g: tensor<768xf32>, %logits: tensor<16x100xf32>,
              %labels: tensor<16xi64>, %dw: tensor<64x1x3x3xf32>) {
  // CHECK: graph.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<1x64x112x112xf32>
  %0 = graph.conv %img, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<1x64x112x112xf32>
  // CHECK: graph.conv %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 64 : i64
  %1 = graph.conv %0, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 64 : i64} : (tensor<1x64x112x112xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x112x112xf32>
  // CHECK: graph.pool max %{{.*}} {{.*}} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
  %2 = graph.pool max %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
  // CHECK: graph.pool avg %{{.*}} {ceil_mode, {{.*}}} : (tensor<1x64x56x56xf32>) -> tensor<1x64x28x28xf32>
  %3 = graph.pool avg %2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x64x56x56xf32>) -> tensor<1x64x28x28xf32>
  // CHECK: graph.pool avg %{{.*}} {global} : (tensor<1x64x28x28xf32>) -> tensor<1x64x1x1xf32>
  %4 = graph.pool avg %3 {global} : (tensor<1x64x28x28xf32>) -> tensor<1x64x1x1xf32>
  // CHECK: graph.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64}
  %5 = graph.batch_norm %2, %b, %b, %b, %b {epsilon = 1.0e-3 : f64} : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x64x56x56xf32>
  // CHECK: %{{.*}}, %{{.*}}:2 = graph.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {training} : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>)
  %t, %rm, %rv = graph.batch_norm %2, %b, %b, %b, %b {training} : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>)
  // CHECK: graph.softmax %{{.*}} {axis = 1 : i64, log} : (tensor<2x8x768xf32>) -> tensor<2x8x768xf32>
  %6 = graph.softmax %x {axis = 1 : i64, log} : (tensor<2x8x768xf32>) -> tensor<2x8x768xf32>
  // CHECK: graph.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  %7 = graph.layer_norm %x, %g, %g : (tensor<2x8x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  // CHECK: graph.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  %8 = graph.rms_norm %x, %g {epsilon = 1.0e-5 : f64} : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  // CHECK: graph.reduce mean %{{.*}} {axes = array<i64: -1>} : (tensor<2x8x768xf32>) -> tensor<2x8x1xf32>
  %9 = graph.reduce mean %x {axes = array<i64: -1>} : (tensor<2x8x768xf32>) -> tensor<2x8x1xf32>
  // CHECK: graph.reduce sum %{{.*}} {keepdims = false} : (tensor<2x8x768xf32>) -> tensor<f32>
  %10 = graph.reduce sum %x {keepdims = false} : (tensor<2x8x768xf32>) -> tensor<f32>
  // CHECK: graph.reduce arg_max %{{.*}} {axes = array<i64: 2>, keepdims = false} : (tensor<2x8x768xf32>) -> tensor<2x8xi64>
  %11 = graph.reduce arg_max %x {axes = array<i64: 2>, keepdims = false} : (tensor<2x8x768xf32>) -> tensor<2x8xi64>
  // CHECK: graph.reduce arg_min %{{.*}} {axes = array<i64: 2>, keepdims = false, select_last_index = true} : (tensor<2x8x768xf32>) -> tensor<2x8xi64>
  %arglast = graph.reduce arg_min %x {axes = array<i64: 2>, keepdims = false, select_last_index = true} : (tensor<2x8x768xf32>) -> tensor<2x8xi64>
  // CHECK: graph.softmax_cross_entropy mean %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<f32>
  %12 = graph.softmax_cross_entropy mean %logits, %labels {ignore_index = -100 : i64} : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<f32>
  // CHECK: graph.softmax_cross_entropy none {{.*}} -> tensor<16xf32>
  %13 = graph.softmax_cross_entropy none %logits, %labels : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<16xf32>
  return
}

// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%x: tensor<?x8xf32>, %y: tensor<8xf32>) -> tensor<?x8xf32> {
  // CHECK: graph.binary mul {{.*}} -> tensor<?x8xf32>
  %0 = graph.binary mul %x, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @iota_and_fmod
func.func @iota_and_fmod(%a: tensor<6xi64>, %b: tensor<6xi64>) -> (tensor<1024xi64>, tensor<8xf32>, tensor<6xi64>) {
  // CHECK: graph.iota {delta = 1 : i64, start = 0 : i64} : tensor<1024xi64>
  %0 = graph.iota {start = 0 : i64, delta = 1 : i64} : tensor<1024xi64>
  // CHECK: graph.iota {delta = -2.500000e-01 : f32, start = 1.000000e+00 : f32} : tensor<8xf32>
  %1 = graph.iota {start = 1.0 : f32, delta = -0.25 : f32} : tensor<8xf32>
  // CHECK: graph.binary mod %{{.*}}, %{{.*}} {fmod} : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
  %2 = graph.binary mod %a, %b {fmod} : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
  return %0, %1, %2 : tensor<1024xi64>, tensor<8xf32>, tensor<6xi64>
}
