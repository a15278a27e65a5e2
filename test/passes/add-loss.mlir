// The dtc-add-loss pass: @forward -> @train_step (loss) and @eval_step
// (inference mode, loss and correct count).
// RUN: dtc-opt %s -split-input-file -dtc-add-loss | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-add-loss=loss=mse | FileCheck %s --check-prefix=MSE
// RUN: not dtc-opt %s -split-input-file -dtc-add-loss=loss=hinge 2>&1 | FileCheck %s --check-prefix=BAD

// A classifier gets cross-entropy against i64 labels of shape [batch].
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32> {dtc.name = "input"}, %[[L:.*]]: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"})
// CHECK: %[[LOGITS:.*]] = dtc.gemm
// CHECK: %[[LOSS:.*]] = dtc.softmax_cross_entropy %[[LOGITS]], %[[L]]
// CHECK: return %[[LOSS]]
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: -> (tensor<f32> {dtc.name = "loss"}, tensor<i64> {dtc.name = "correct"})
// CHECK: dtc.softmax_cross_entropy
// CHECK: dtc.count_correct
// MSE-LABEL: func.func @train_step
// MSE-SAME: %{{.*}}: tensor<2x3xf32> {dtc.name = "labels"}
// MSE: dtc.mse_loss
// MSE-LABEL: func.func @eval_step
// MSE-SAME: -> (tensor<f32> {dtc.name = "loss"})
// BAD: error: --loss: unknown loss 'hinge' (expected auto, cross-entropy, mse or output:NAME)
dtc.param weight @w : tensor<3x6xf32> = dense<0.1> : tensor<3x6xf32>
func.func @forward(%x: tensor<2x6xf32> {dtc.name = "input"}) -> (tensor<2x3xf32> {dtc.name = "logits"}) {
  %w = dtc.param_ref @w : tensor<3x6xf32>
  %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x6xf32>, tensor<3x6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// The eval step uses batch norm's running statistics and does not update
// them; dropout is the identity there. The train step keeps both.
// CHECK-LABEL: func.func @train_step
// CHECK: dtc.batch_norm %
// CHECK: dtc.assign @mean
// CHECK: dtc.dropout
// CHECK-LABEL: func.func @eval_step
// CHECK-NOT: dtc.assign
// CHECK-NOT: dtc.dropout
// CHECK: %[[MEAN:.*]] = dtc.param_ref @mean
// CHECK: %[[VAR:.*]] = dtc.param_ref @var
// CHECK: dtc.batch_norm_inference %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]], %[[VAR]]
// CHECK-NOT: dtc.assign
// CHECK-NOT: dtc.dropout
// CHECK: return
dtc.param weight @scale : tensor<4xf32> = dense<1.0> : tensor<4xf32>
dtc.param weight @bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param buffer @mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param buffer @var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = dtc.param_ref @scale : tensor<4xf32>
  %b = dtc.param_ref @bias : tensor<4xf32>
  %m = dtc.param_ref @mean : tensor<4xf32>
  %v = dtc.param_ref @var : tensor<4xf32>
  %y:5 = dtc.batch_norm %x, %s, %b, %m, %v : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  dtc.assign @mean, %y#1 : tensor<4xf32>
  dtc.assign @var, %y#2 : tensor<4xf32>
  %d:2 = dtc.dropout %y#0 {ratio = 0.5 : f32} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xi1>)
  return %d#0 : tensor<8x4xf32>
}

// -----

// Sequence models: logits [batch, time, vocab] take labels [batch, time].
// Over 5 classes, @eval_step also counts the top-5 hits.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: tensor<2x16xi64> {dtc.name = "labels"}
// CHECK: dtc.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<2x16x96xf32>, tensor<2x16xi64>) -> tensor<f32>
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: -> (tensor<f32> {dtc.name = "loss"}, tensor<i64> {dtc.name = "correct"}, tensor<i64> {dtc.name = "correct_top5"})
// CHECK: %[[TOP1:.*]] = dtc.count_correct %{{.*}}, %{{.*}} : (tensor<2x16x96xf32>, tensor<2x16xi64>) -> tensor<i64>
// CHECK: %[[TOP5:.*]] = dtc.count_correct %{{.*}}, %{{.*}} {top_k = 5 : i64}
// CHECK: return %{{.*}}, %[[TOP1]], %[[TOP5]]
func.func @forward(%x: tensor<2x16x96xf32>) -> tensor<2x16x96xf32> {
  return %x : tensor<2x16x96xf32>
}

