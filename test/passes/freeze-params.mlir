// The dtc-freeze-params pass: weights whose names match become constants.
// RUN: dtc-opt %s -dtc-freeze-params="pattern=fc1\..*" | FileCheck %s
// RUN: dtc-opt %s -dtc-freeze-params="pattern=nothing" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not dtc-opt %s -dtc-freeze-params="pattern=fc1[" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: dtc-opt %s -dtc-freeze-params="pattern=fc1\..*" -dtc-add-loss -dtc-differentiate | FileCheck %s --check-prefix=GRAD

// The whole name must match; buffers are never touched.
// CHECK: dtc.param constant @fc1.weight
// CHECK: dtc.param constant @fc1.bias
// CHECK: dtc.param weight @fc2.weight
// CHECK: dtc.param weight @xfc1.weight
// CHECK: dtc.param buffer @fc1.stats

// NONE: warning: --freeze: 'nothing' matches no trainable weight
// BAD: error: --freeze: 'fc1[' is not a valid regex

// Frozen weights get no gradient; the others still do.
// GRAD-LABEL: func.func @train_step
// GRAD: dtc.gradient @xfc1.weight
// GRAD: dtc.gradient @fc2.weight
// GRAD-NOT: dtc.gradient @fc1

dtc.param weight @fc1.weight : tensor<4x4xf32> = dense<0.5> : tensor<4x4xf32>
dtc.param weight @fc1.bias : tensor<4xf32> = dense<0.5> : tensor<4xf32>
dtc.param weight @fc2.weight : tensor<4x4xf32> = dense<0.5> : tensor<4x4xf32>
dtc.param weight @xfc1.weight : tensor<4x4xf32> = dense<0.5> : tensor<4x4xf32>
dtc.param buffer @fc1.stats : tensor<4xf32> = dense<0.5> : tensor<4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x4xf32>
  %b1 = dtc.param_ref @fc1.bias : tensor<4xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<4x4xf32>
  %w3 = dtc.param_ref @xfc1.weight : tensor<4x4xf32>
  %0 = dtc.gemm %x, %w1, %b1 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.gemm %0, %w2 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = dtc.gemm %1, %w3 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}
