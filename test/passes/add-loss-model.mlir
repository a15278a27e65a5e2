// dtc-add-loss on a model that computes its own loss: a float scalar output
// computed from the model's last input. The steps train on that output with
// the last input as the labels; @forward keeps the outputs that do not need
// the labels and loses the labels input. --loss=auto (the default) finds
// the loss; --loss=output:NAME names it; --loss=cross-entropy ignores it.
// RUN: dtc-opt %s -split-input-file -dtc-add-loss | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-add-loss=loss=output:loss | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-add-loss=loss=cross-entropy | FileCheck %s --check-prefix=BUILTIN

// CHECK: module attributes {dtc.loss = "output:loss"}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%{{.*}}: tensor<2x6xf32> {dtc.name = "input"}) -> (tensor<2x3xf32> {dtc.name = "logits"})
// CHECK-NOT: dtc.softmax_cross_entropy
// CHECK: return
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32> {dtc.name = "input"}, %[[L:.*]]: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"})
// CHECK: %[[LOGITS:.*]] = dtc.gemm %[[X]]
// CHECK: %[[CE:.*]] = dtc.softmax_cross_entropy %[[LOGITS]], %[[L]]
// CHECK: %[[LOSS:.*]] = dtc.mul %[[CE]]
// CHECK: return %[[LOSS]]
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: -> (tensor<f32> {dtc.name = "loss"})
// BUILTIN: module attributes {dtc.loss = "cross-entropy"}
// BUILTIN-LABEL: func.func @train_step
// BUILTIN-SAME: %{{.*}}: tensor<2xi64> {dtc.name = "labels"}, %{{.*}}: tensor<2xi64> {dtc.name = "labels"})
dtc.param weight @w : tensor<3x6xf32> = dense<0.1> : tensor<3x6xf32>
func.func @forward(%x: tensor<2x6xf32> {dtc.name = "input"}, %y: tensor<2xi64> {dtc.name = "labels"})
    -> (tensor<2x3xf32> {dtc.name = "logits"}, tensor<f32> {dtc.name = "loss"}) {
  %w = dtc.param_ref @w : tensor<3x6xf32>
  %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x6xf32>, tensor<3x6xf32>) -> tensor<2x3xf32>
  %1 = dtc.softmax_cross_entropy %0, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %c = dtc.constant dense<0.5> : tensor<f32>
  %2 = dtc.mul %1, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0, %2 : tensor<2x3xf32>, tensor<f32>
}
