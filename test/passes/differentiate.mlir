// The dtc-differentiate pass: reverse-mode autodiff of @train_step.
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -verify-diagnostics | FileCheck %s

// A two-layer MLP: gradients come out last layer first, each weight's
// dtc.gradient right after its gradient is computed; the input gets none.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[W2:.*]] = dtc.param_ref @fc2.weight
// CHECK: %[[PRE:.*]] = dtc.gemm %arg0
// CHECK: %[[H:.*]] = dtc.relu %[[PRE]] : tensor<2x4xf32>
// CHECK: %[[LOGITS:.*]] = dtc.gemm %[[H]], %[[W2]], %{{.*}} {transB = true}
// CHECK: %[[ONE:.*]] = dtc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DLOGITS:.*]] = dtc.softmax_cross_entropy_grad %[[LOGITS]], %arg1, %[[ONE]]
// CHECK: %[[DH:.*]] = dtc.gemm %[[DLOGITS]], %[[W2]] :
// CHECK: %[[DW2:.*]] = dtc.gemm %[[DLOGITS]], %[[H]] {transA = true}
// CHECK: %[[DB2:.*]] = dtc.reduce_to_shape %[[DLOGITS]] {shape = array<i64: 3>}
// CHECK: dtc.gradient @fc2.weight, %[[DW2]] : tensor<3x4xf32>
// CHECK: dtc.gradient @fc2.bias, %[[DB2]] : tensor<3xf32>
// CHECK: %[[DPRE:.*]] = dtc.relu_grad %[[PRE]], %[[DH]]
// CHECK-NOT: dtc.gemm %[[DPRE]], %{{.*}} :
// CHECK: %[[DW1:.*]] = dtc.gemm %[[DPRE]], %arg0 {transA = true}
// CHECK: dtc.gradient @fc1.weight, %[[DW1]]
// CHECK: dtc.gradient @fc1.bias
// CHECK: return
dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc1.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
dtc.param weight @fc2.bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @train_step(%x: tensor<2x6xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %b1 = dtc.param_ref @fc1.bias : tensor<4xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %b2 = dtc.param_ref @fc2.bias : tensor<3xf32>
  %0 = dtc.gemm %x, %w1, %b1 {transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.relu %0 : tensor<2x4xf32>
  %2 = dtc.gemm %1, %w2, %b2 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = dtc.softmax_cross_entropy %2, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A value used twice gets the sum of both gradients, and so does a weight
// read twice (tied weights): one dtc.gradient with the total.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[W:.*]] = dtc.param_ref @w
// CHECK: dtc.mse_loss
// CHECK: %[[G1:.*]] = dtc.mul %[[D:.*]], %[[W]] :
// CHECK-NEXT: %[[G2:.*]] = dtc.mul %[[D]], %[[W]] :
// CHECK-NEXT: %[[SUM:.*]] = dtc.add %[[G1]], %[[G2]]
// CHECK-NEXT: %[[TOTAL:.*]] = dtc.add %[[D]], %[[SUM]]
// CHECK-NEXT: dtc.gradient @w, %[[TOTAL]]
// CHECK-NOT: dtc.gradient
dtc.param weight @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<f32> {
  %w = dtc.param_ref @w : tensor<4xf32>
  %w_again = dtc.param_ref @w : tensor<4xf32>
  %0 = dtc.mul %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = dtc.add %0, %w_again : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = dtc.mse_loss %1, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Frozen weights (constants) and buffers get no gradient; nor does a
// weight the loss does not depend on.
// CHECK-LABEL: func.func @train_step
// CHECK: dtc.gradient @trained
// CHECK-NOT: dtc.gradient @frozen
// CHECK-NOT: dtc.gradient @unused
dtc.param weight @trained : tensor<4xf32> = dense<0.5> : tensor<4xf32>
dtc.param constant @frozen : tensor<4xf32> = dense<0.5> : tensor<4xf32>
dtc.param weight @unused : tensor<4xf32> = dense<0.5> : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<f32> {
  %a = dtc.param_ref @trained : tensor<4xf32>
  %b = dtc.param_ref @frozen : tensor<4xf32>
  %c = dtc.param_ref @unused : tensor<4xf32>
  %0 = dtc.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = dtc.mul %c, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = dtc.mse_loss %0, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Convolution, batch norm and pooling use their gradient ops; the running
// statistics get no gradient.
// CHECK-LABEL: func.func @train_step
// CHECK: dtc.global_average_pool
// CHECK: %[[DPOOL:.*]] = dtc.expand
// CHECK: %[[DX:.*]], %[[DSCALE:.*]], %[[DBIAS:.*]] = dtc.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DPOOL]]
// CHECK: dtc.gradient @scale, %[[DSCALE]]
// CHECK: dtc.gradient @bias, %[[DBIAS]]
// CHECK: dtc.max_pool_grad %[[DX]], %{{.*}} {input_shape = array<i64: 2, 4, 8, 8>}
// CHECK: dtc.conv_backward_filter %arg0, %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 4, 3, 3, 3>}
// CHECK: dtc.gradient @conv
// CHECK-NOT: dtc.conv_backward_data
// CHECK-NOT: dtc.gradient @mean
dtc.param weight @conv : tensor<4x3x3x3xf32> = dense<0.1> : tensor<4x3x3x3xf32>
dtc.param weight @scale : tensor<4xf32> = dense<1.0> : tensor<4xf32>
dtc.param weight @bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param buffer @mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param buffer @var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @train_step(%x: tensor<2x3x8x8xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %w = dtc.param_ref @conv : tensor<4x3x3x3xf32>
  %s = dtc.param_ref @scale : tensor<4xf32>
  %b = dtc.param_ref @bias : tensor<4xf32>
  %m = dtc.param_ref @mean : tensor<4xf32>
  %v = dtc.param_ref @var : tensor<4xf32>
  %0 = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %1:2 = dtc.max_pool %0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x8x8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi32>)
  %2:5 = dtc.batch_norm %1#0, %s, %b, %m, %v : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  dtc.assign @mean, %2#1 : tensor<4xf32>
  dtc.assign @var, %2#2 : tensor<4xf32>
  %3 = dtc.global_average_pool %2#0 : (tensor<2x4x4x4xf32>) -> tensor<2x4x1x1xf32>
  %4 = dtc.flatten %3 : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %5 = dtc.softmax_cross_entropy %4, %labels : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}

// -----

// Training through inference-mode batch norm is refused with the fix.
dtc.param weight @s : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @train_step(%x: tensor<2x4xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %s = dtc.param_ref @s : tensor<4xf32>
  // expected-error@+1 {{batch normalization in inference mode cannot be trained; export the model with training=torch.onnx.TrainingMode.TRAINING}}
  %0 = dtc.batch_norm_inference %x, %s, %s, %s, %s : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.softmax_cross_entropy %0, %labels : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Nothing to train is an error, not a silent no-op.
dtc.param constant @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
// expected-error@+1 {{the loss does not depend on any trainable weight: nothing to train (are all weights frozen?)}}
func.func @train_step(%x: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<f32> {
  %w = dtc.param_ref @w : tensor<4xf32>
  %0 = dtc.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = dtc.mse_loss %0, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Pipelines: each backward op gets the `dtc.stage` of the forward op it
// differentiates (the VJP of the stage-0 GEMM runs on stage 0, those of the
// stage-1 ops on stage 1). Ops autodiff adds around the VJPs get none
// (dtc-schedule-pipeline places them): the seed constant, the sum of the
// two gradients of %0 (read by the relu and the add of stage 1) and the
// dtc.gradient ops.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[PRE:.*]] = dtc.gemm %arg0, %{{.*}} {dtc.stage = 0 : i64, transB = true}
// CHECK-NEXT: %[[H:.*]] = dtc.relu %[[PRE]] {dtc.stage = 1 : i64}
// CHECK-NEXT: %[[SUM:.*]] = dtc.add %[[PRE]], %[[H]] {dtc.stage = 1 : i64}
// CHECK-NEXT: %[[LOGITS:.*]] = dtc.gemm %[[SUM]], %{{.*}} {dtc.stage = 1 : i64, transB = true}
// CHECK-NEXT: dtc.softmax_cross_entropy %[[LOGITS]], %arg1 {dtc.stage = 1 : i64}
// CHECK-NEXT: %[[ONE:.*]] = dtc.constant dense<1.000000e+00> : tensor<f32>{{$}}
// CHECK-NEXT: %[[DLOGITS:.*]] = dtc.softmax_cross_entropy_grad %[[LOGITS]], %arg1, %[[ONE]] {dtc.stage = 1 : i64}
// CHECK-NEXT: %[[DSUM:.*]] = dtc.gemm %[[DLOGITS]], %{{.*}} {dtc.stage = 1 : i64}
// CHECK-NEXT: %[[DW2:.*]] = dtc.gemm %[[DLOGITS]], %[[SUM]] {dtc.stage = 1 : i64, transA = true}
// CHECK-NEXT: dtc.gradient @w2, %[[DW2]] : tensor<3x4xf32>{{$}}
// CHECK-NEXT: %[[DRELU:.*]] = dtc.relu_grad %[[PRE]], %[[DSUM]] {dtc.stage = 1 : i64}
// CHECK-NEXT: %[[DPRE:.*]] = dtc.add %[[DSUM]], %[[DRELU]] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>{{$}}
// CHECK-NEXT: %[[DW1:.*]] = dtc.gemm %[[DPRE]], %arg0 {dtc.stage = 0 : i64, transA = true}
// CHECK-NEXT: dtc.gradient @w1, %[[DW1]] : tensor<4x6xf32>{{$}}
// CHECK-NEXT: return
dtc.param weight @w1 : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @w2 : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %w1 = dtc.param_ref @w1 : tensor<4x6xf32>
  %w2 = dtc.param_ref @w2 : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %1 = dtc.relu %0 {dtc.stage = 1 : i64} : tensor<2x4xf32>
  %2 = dtc.add %0, %1 {dtc.stage = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = dtc.gemm %2, %w2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %4 = dtc.softmax_cross_entropy %3, %labels {dtc.stage = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}
