// Round trip of every dtc op: parse, verify, print, parse the print again.
// RUN: dtc-opt %s | dtc-opt | FileCheck %s
// RUN: dtc-opt %s --mlir-print-op-generic | dtc-opt | FileCheck %s

// CHECK: dtc.param weight @fc1.weight : tensor<2x3xf32> = dense<{{.*}}> : tensor<2x3xf32>
dtc.param weight @"fc1.weight" : tensor<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
// CHECK: dtc.param buffer @running_mean : tensor<4xf32> = dense<0.000000e+00>
dtc.param buffer @running_mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
// CHECK: dtc.param constant @mask : tensor<2x2xi1>
dtc.param constant @mask : tensor<2x2xi1> = dense<[[true, false], [true, true]]> : tensor<2x2xi1>
// CHECK: dtc.param optimizer_state @fc1.weight.momentum : tensor<2x3xf32>{{$}}
dtc.param optimizer_state @"fc1.weight.momentum" : tensor<2x3xf32>

// CHECK-LABEL: func @structure
func.func @structure(%x: tensor<4xf32>) -> tensor<2x3xf32> {
  // CHECK: dtc.param_ref @fc1.weight : tensor<2x3xf32>
  %w = dtc.param_ref @"fc1.weight" : tensor<2x3xf32>
  // CHECK: dtc.assign @running_mean, %{{.*}} : tensor<4xf32>
  dtc.assign @running_mean, %x : tensor<4xf32>
  // CHECK: dtc.constant dense<5.000000e-01> : tensor<f32>
  %c = dtc.constant dense<0.5> : tensor<f32>
  return %w : tensor<2x3xf32>
}

// CHECK-LABEL: func @elementwise
func.func @elementwise(%a: tensor<8x1xf32>, %b: tensor<4xf32>, %c: tensor<8x4xi1>) {
  // CHECK: dtc.add %{{.*}}, %{{.*}} : (tensor<8x1xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %0 = dtc.add %a, %b : (tensor<8x1xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %1 = dtc.sub %0, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = dtc.mul %1, %a : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  %3 = dtc.div %2, %2 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %4 = dtc.pow %3, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  // CHECK: dtc.sqrt %{{.*}} : tensor<8x4xf32>
  %5 = dtc.sqrt %4 : tensor<8x4xf32>
  %6 = dtc.neg %5 : tensor<8x4xf32>
  %7 = dtc.exp %6 : tensor<8x4xf32>
  %8 = dtc.log %7 : tensor<8x4xf32>
  %9 = dtc.relu %8 : tensor<8x4xf32>
  %10 = dtc.sigmoid %9 : tensor<8x4xf32>
  %11 = dtc.tanh %10 : tensor<8x4xf32>
  %12 = dtc.erf %11 : tensor<8x4xf32>
  // CHECK: dtc.gelu %{{.*}} {approximate = "tanh"} : tensor<8x4xf32>
  %13 = dtc.gelu %12 {approximate = "tanh"} : tensor<8x4xf32>
  %14 = dtc.identity %13 : tensor<8x4xf32>
  // CHECK: dtc.cast %{{.*}} {to = i64} : (tensor<8x4xf32>) -> tensor<8x4xi64>
  %15 = dtc.cast %14 {to = i64} : (tensor<8x4xf32>) -> tensor<8x4xi64>
  // CHECK: dtc.where
  %16 = dtc.where %c, %14, %b : (tensor<8x4xi1>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  // CHECK: dtc.dropout %{{.*}} {ratio = 1.000000e-01 : f32} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xi1>)
  %17:2 = dtc.dropout %16 {ratio = 0.1 : f32} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xi1>)
  // CHECK: dtc.compare %{{.*}}, %{{.*}} {predicate = 3 : i32} : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xi1>
  %18 = dtc.compare %16, %b {predicate = 3 : i32} : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xi1>
  // CHECK: dtc.logical %{{.*}}, %{{.*}} {kind = 2 : i32} : (tensor<8x4xi1>, tensor<8x4xi1>) -> tensor<8x4xi1>
  %19 = dtc.logical %18, %c {kind = 2 : i32} : (tensor<8x4xi1>, tensor<8x4xi1>) -> tensor<8x4xi1>
  // CHECK: dtc.logical_not %{{.*}} : tensor<8x4xi1>
  %20 = dtc.logical_not %19 : tensor<8x4xi1>
  return
}

// CHECK-LABEL: func @activations
func.func @activations(%x: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // CHECK: dtc.activation leaky_relu %{{.*}} {alpha = 1.000000e-01 : f32} : tensor<8x4xf32>
  %0 = dtc.activation leaky_relu %x {alpha = 0.1 : f32} : tensor<8x4xf32>
  // CHECK: dtc.activation clip %{{.*}} {alpha = -1.000000e+00 : f32, beta = 0x7F800000 : f32} : tensor<8x4xf32>
  %1 = dtc.activation clip %0 {alpha = -1.0 : f32, beta = 0x7F800000 : f32} : tensor<8x4xf32>
  // CHECK: dtc.activation_grad hard_swish %{{.*}}, %{{.*}} : tensor<8x4xf32>
  %2 = dtc.activation_grad hard_swish %x, %1 : tensor<8x4xf32>
  // CHECK: dtc.maximum %{{.*}}, %{{.*}} : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %3 = dtc.maximum %2, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  // CHECK: dtc.minimum
  %4 = dtc.minimum %3, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  // CHECK: dtc.extremum_grad %{{.*}}, %{{.*}}, %{{.*}} {is_max = true} : (tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
  %5:2 = dtc.extremum_grad %3, %b, %4 {is_max = true} : (tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
  return
}

// CHECK-LABEL: func @linear_algebra
func.func @linear_algebra(%x: tensor<64x784xf32>, %w: tensor<128x784xf32>, %b: tensor<128xf32>,
                          %q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>) {
  // CHECK: dtc.gemm %{{.*}}, %{{.*}}, %{{.*}} {transB = true} : (tensor<64x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %0 = dtc.gemm %x, %w, %b {transB = true} : (tensor<64x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  // CHECK: dtc.gemm %{{.*}}, %{{.*}} {alpha = 2.000000e+00 : f32, transB = true} : (tensor<64x784xf32>, tensor<128x784xf32>) -> tensor<64x128xf32>
  %1 = dtc.gemm %x, %w {alpha = 2.0 : f32, transB = true} : (tensor<64x784xf32>, tensor<128x784xf32>) -> tensor<64x128xf32>
  // CHECK: dtc.matmul {{.*}} -> tensor<2x4x16x16xf32>
  %2 = dtc.matmul %q, %k : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %3 = dtc.softmax %2 {axis = -1 : i64} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %4 = dtc.log_softmax %2 {axis = 3 : i64} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  // CHECK: dtc.reduce_mean {{.*}} -> tensor<2x4x16x1xf32>
  %5 = dtc.reduce_mean %4 {axes = array<i64: -1>} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x1xf32>
  // CHECK: dtc.reduce_sum {{.*}} -> tensor<f32>
  %6 = dtc.reduce_sum %4 {axes = array<i64>, keepdims = false} : (tensor<2x4x16x16xf32>) -> tensor<f32>
  return
}

// 3-D (NCDHW): one kernel size, stride and dilation per spatial dimension,
// the begin pads then the end pads.
// CHECK-LABEL: func @volumes
func.func @volumes(%x: tensor<2x3x8x8x8xf32>, %w: tensor<4x3x3x3x3xf32>,
                   %t: tensor<4x2x2x2x2xf32>) {
  // CHECK: dtc.conv {{.*}} -> tensor<2x4x4x4x4xf32>
  %0 = dtc.conv %x, %w {strides = array<i64: 2, 2, 2>, pads = array<i64: 1, 1, 1, 1, 1, 1>, dilations = array<i64: 1, 1, 1>}
      : (tensor<2x3x8x8x8xf32>, tensor<4x3x3x3x3xf32>) -> tensor<2x4x4x4x4xf32>
  // CHECK: dtc.max_pool {{.*}} -> (tensor<2x4x3x2x2xf32>, tensor<2x4x3x2x2xi32>)
  %1:2 = dtc.max_pool %0 {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 1, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>}
      : (tensor<2x4x4x4x4xf32>) -> (tensor<2x4x3x2x2xf32>, tensor<2x4x3x2x2xi32>)
  // CHECK: dtc.average_pool {{.*}} -> tensor<2x4x2x2x2xf32>
  %2 = dtc.average_pool %0 {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>}
      : (tensor<2x4x4x4x4xf32>) -> tensor<2x4x2x2x2xf32>
  // CHECK: dtc.conv_transpose {{.*}} -> tensor<2x2x4x4x4xf32>
  %3 = dtc.conv_transpose %2, %t {strides = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, output_padding = array<i64: 0, 0, 0>}
      : (tensor<2x4x2x2x2xf32>, tensor<4x2x2x2x2xf32>) -> tensor<2x2x4x4x4xf32>
  return
}

// CHECK-LABEL: func @conv_net
func.func @conv_net(%x: tensor<64x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>,
                    %s: tensor<16xf32>) {
  // CHECK: dtc.conv {{.*}} -> tensor<64x16x16x16xf32>
  %0 = dtc.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<64x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<64x16x16x16xf32>
  // CHECK: dtc.batch_norm {{.*}} -> (tensor<64x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %1:5 = dtc.batch_norm %0, %s, %s, %s, %s {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<64x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
      -> (tensor<64x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %2 = dtc.batch_norm_inference %1#0, %s, %s, %s, %s
      : (tensor<64x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<64x16x16x16xf32>
  // CHECK: dtc.max_pool {{.*}} -> (tensor<64x16x8x8xf32>, tensor<64x16x8x8xi32>)
  %3:2 = dtc.max_pool %2 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<64x16x16x16xf32>) -> (tensor<64x16x8x8xf32>, tensor<64x16x8x8xi32>)
  // CHECK: dtc.max_pool_grad {{.*}} {input_shape = array<i64: 64, 16, 16, 16>} : (tensor<64x16x8x8xf32>, tensor<64x16x8x8xi32>) -> tensor<64x16x16x16xf32>
  %g = dtc.max_pool_grad %3#0, %3#1 {input_shape = array<i64: 64, 16, 16, 16>} : (tensor<64x16x8x8xf32>, tensor<64x16x8x8xi32>) -> tensor<64x16x16x16xf32>
  // CHECK: dtc.average_pool {{.*}} -> tensor<64x16x4x4xf32>
  %4 = dtc.average_pool %3#0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
      : (tensor<64x16x8x8xf32>) -> tensor<64x16x4x4xf32>
  // CHECK: dtc.global_average_pool {{.*}} -> tensor<64x16x1x1xf32>
  %5 = dtc.global_average_pool %4 : (tensor<64x16x4x4xf32>) -> tensor<64x16x1x1xf32>
  // CHECK: dtc.flatten {{.*}} -> tensor<64x16xf32>
  %6 = dtc.flatten %5 : (tensor<64x16x1x1xf32>) -> tensor<64x16xf32>
  // CHECK: dtc.layer_norm {{.*}} -> (tensor<64x16xf32>, tensor<64xf32>, tensor<64xf32>)
  %7:3 = dtc.layer_norm %6, %s, %s {epsilon = 1.0e-5 : f32} : (tensor<64x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<64x16xf32>, tensor<64xf32>, tensor<64xf32>)
  return
}

// CHECK-LABEL: func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>, %table: tensor<96x32xf32>, %tokens: tensor<8x16xi64>) {
  // CHECK: dtc.reshape {{.*}} -> tensor<6x4xf32>
  %0 = dtc.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: dtc.transpose {{.*}} -> tensor<4x2x3xf32>
  %1 = dtc.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %2 = dtc.unsqueeze %x {axes = array<i64: 0, 3>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x1x4xf32>
  %3 = dtc.squeeze %2 {axes = array<i64: 0, -2>} : (tensor<1x2x3x1x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: dtc.concat {{.*}} -> tensor<2x6x4xf32>
  %4 = dtc.concat %x, %3 {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  // CHECK: dtc.split {{.*}} -> (tensor<2x1x4xf32>, tensor<2x5x4xf32>)
  %5:2 = dtc.split %4 {axis = 1 : i64, sizes = array<i64: 1, 5>} : (tensor<2x6x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x5x4xf32>)
  // CHECK: dtc.slice {{.*}} -> tensor<2x3x2xf32>
  %6 = dtc.slice %4 {starts = array<i64: 0, 3>, ends = array<i64: 6, 0>, axes = array<i64: 1, 2>, steps = array<i64: 2, -2>}
      : (tensor<2x6x4xf32>) -> tensor<2x3x2xf32>
  // CHECK: dtc.gather {{.*}} -> tensor<8x16x32xf32>
  %7 = dtc.gather %table, %tokens : (tensor<96x32xf32>, tensor<8x16xi64>) -> tensor<8x16x32xf32>
  // CHECK: dtc.expand {{.*}} -> tensor<5x2x3x4xf32>
  %8 = dtc.expand %x {shape = array<i64: 5, 1, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<5x2x3x4xf32>
  return
}

// CHECK-LABEL: func @resample
func.func @resample(%x: tensor<2x3x4x5xf32>, %w: tensor<3x2x3x3xf32>) {
  // CHECK: dtc.pad %{{.*}} {mode = "reflect", pads = array<i64: 0, 0, 1, 2, 0, 0, 3, 4>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x8x11xf32>
  %0 = dtc.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 3, 4>, mode = "reflect"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x8x11xf32>
  // CHECK: dtc.pad_grad %{{.*}} {input_shape = array<i64: 2, 3, 4, 5>, mode = "reflect", pads = array<i64: 0, 0, 1, 2, 0, 0, 3, 4>} : (tensor<2x3x8x11xf32>) -> tensor<2x3x4x5xf32>
  %1 = dtc.pad_grad %0 {input_shape = array<i64: 2, 3, 4, 5>, pads = array<i64: 0, 0, 1, 2, 0, 0, 3, 4>, mode = "reflect"} : (tensor<2x3x8x11xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: dtc.pad %{{.*}} {pads = array<i64: 0, 0, 0, 1, 0, 0, 0, 0>, value = 5.000000e-01 : f64} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x6xf32>
  %2 = dtc.pad %1 {pads = array<i64: 0, 0, 0, 1, 0, 0, 0, 0>, value = 0.5 : f64} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x6xf32>
  // CHECK: dtc.resize %{{.*}} {coordinate_mode = "asymmetric", nearest_mode = "floor", scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, sizes = array<i64: 2, 3, 8, 10>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x8x10xf32>
  %3 = dtc.resize %x {sizes = array<i64: 2, 3, 8, 10>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, coordinate_mode = "asymmetric", nearest_mode = "floor"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x8x10xf32>
  // CHECK: dtc.resize_grad %{{.*}} {coordinate_mode = "align_corners", input_shape = array<i64: 2, 3, 4, 5>, mode = "linear", scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>} : (tensor<2x3x8x10xf32>) -> tensor<2x3x4x5xf32>
  %4 = dtc.resize_grad %3 {input_shape = array<i64: 2, 3, 4, 5>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "linear", coordinate_mode = "align_corners"} : (tensor<2x3x8x10xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: dtc.conv_transpose %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x4x5xf32>, tensor<3x2x3x3xf32>) -> tensor<2x2x8x9xf32>
  %5 = dtc.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>} : (tensor<2x3x4x5xf32>, tensor<3x2x3x3xf32>) -> tensor<2x2x8x9xf32>
  return
}

// CHECK-LABEL: func @vocab_parallel
func.func @vocab_parallel(%ids: tensor<2x3xi64>, %x: tensor<2x3x4xf32>) -> tensor<2x3x8xf32> {
  // CHECK: %{{.*}}, %{{.*}} = dtc.tp_vocab_range %{{.*}} {rows = 4 : i64, vocab = 8 : i64} : tensor<2x3xi64> -> tensor<2x3xi64>, tensor<2x3x1xf32>
  %local, %mask = dtc.tp_vocab_range %ids {rows = 4 : i64, vocab = 8 : i64} : tensor<2x3xi64> -> tensor<2x3xi64>, tensor<2x3x1xf32>
  // CHECK: dtc.tp_gather %{{.*}} : tensor<2x3x4xf32> -> tensor<2x3x8xf32>
  %0 = dtc.tp_gather %x : tensor<2x3x4xf32> -> tensor<2x3x8xf32>
  // CHECK: dtc.tp_slice %{{.*}} : tensor<2x3x8xf32> -> tensor<2x3x4xf32>
  %1 = dtc.tp_slice %0 : tensor<2x3x8xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x8xf32>
}

// CHECK-LABEL: func @vocab_parallel_loss
func.func @vocab_parallel_loss(%x: tensor<2x3x4xf32>, %labels: tensor<2x3xi64>, %g: tensor<f32>) -> tensor<2x3x4xf32> {
  // CHECK: %[[LOSS:.*]], %[[LSE:.*]] = dtc.tp_softmax_cross_entropy %{{.*}}, %{{.*}} {vocab = 8 : i64} : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<f32>, tensor<2x3xf32>
  %loss, %lse = dtc.tp_softmax_cross_entropy %x, %labels {vocab = 8 : i64} : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<f32>, tensor<2x3xf32>
  // CHECK: dtc.tp_softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %[[LSE]], %{{.*}} {vocab = 8 : i64} : tensor<2x3x4xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3x4xf32>
  %0 = dtc.tp_softmax_cross_entropy_grad %x, %labels, %lse, %g {vocab = 8 : i64} : tensor<2x3x4xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
