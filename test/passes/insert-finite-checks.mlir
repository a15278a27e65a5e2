// The dtc-insert-finite-checks pass (dtc --debug-checks): a check after
// every op that writes float32 tensors, naming the op and its ONNX node;
// none after views, params, constants or integer results.
// RUN: dtc-opt %s -dtc-insert-finite-checks | FileCheck %s
// CHECK-LABEL: func.func @forward
// CHECK: %[[G:.*]] = dtc.gemm
// CHECK-NEXT: dtc.check_finite %[[G]] {what = "dtc.gemm (/fc/Gemm)"} : tensor<2x3xf32>
// CHECK-NEXT: %[[S:.*]] = dtc.sqrt %[[G]]
// CHECK-NEXT: dtc.check_finite %[[S]] {what = "dtc.sqrt (/Sqrt)"} : tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = dtc.reshape
// CHECK-NEXT: dtc.constant
// CHECK-NEXT: %[[C:.*]] = dtc.compare
// CHECK-NEXT: dtc.where
// CHECK-NEXT: dtc.check_finite %{{.*}} {what = "dtc.where"} : tensor<6xf32>
// CHECK-NEXT: return
dtc.param weight @w : tensor<3x6xf32> = dense<0.1> : tensor<3x6xf32>
func.func @forward(%x: tensor<2x6xf32>) -> tensor<6xf32> {
  %w = dtc.param_ref @w : tensor<3x6xf32>
  %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x6xf32>, tensor<3x6xf32>) -> tensor<2x3xf32> loc("/fc/Gemm")
  %1 = dtc.sqrt %0 : tensor<2x3xf32> loc("/Sqrt")
  %2 = dtc.reshape %1 {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %zero = dtc.constant dense<0.0> : tensor<f32>
  %3 = dtc.compare %2, %zero {predicate = 2 : i32} : (tensor<6xf32>, tensor<f32>) -> tensor<6xi1>
  %4 = dtc.where %3, %2, %2 : (tensor<6xi1>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %4 : tensor<6xf32>
}
