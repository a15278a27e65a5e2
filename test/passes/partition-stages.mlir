// The dtc-partition-stages pass: every forward op of @train_step (and the
// loss) gets a `dtc.stage`; stages are contiguous runs of ops, balanced by
// the cost model (passes/CostModel.h) or cut at named ONNX nodes.
// RUN: dtc-opt %s -split-input-file -dtc-partition-stages=stages=2 -verify-diagnostics | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-partition-stages=stages=3 -verify-diagnostics | FileCheck %s --check-prefix=THREE
// Cuts at named nodes and the option errors: partition-stages-split-at.mlir.

// Balanced by predicted time, not by op count: a 64x1024x1024 GEMM (about
// 3.4 ms forward on the cost model's machine) followed by seven cheap ops
// (tens of microseconds each). Two stages: the GEMM alone is stage 0 (one op
// against seven); an op-count split would cut after the fourth op. Params
// and constants get no stage: each stage reads its own (dtc.param
// declarations get theirs later, from dtc-schedule-pipeline). The module
// records the node beginning stage 1: none here, the ops have no NameLoc.
// CHECK: module attributes {dtc.stage_starts = [""]}
// CHECK-NOT: dtc.stage =
// CHECK-LABEL: func.func @train_step
// CHECK: dtc.param_ref @big : tensor<1024x1024xf32>{{$}}
// CHECK-NEXT: dtc.param_ref @head : tensor<10x1024xf32>{{$}}
// CHECK-NEXT: dtc.param_ref @shift : tensor<1024xf32>{{$}}
// CHECK-NEXT: dtc.constant dense<2.000000e+00> : tensor<f32>{{$}}
// CHECK-NEXT: dtc.gemm %arg0, %{{.*}} {dtc.stage = 0 : i64, transB = true}
// CHECK-NEXT: dtc.relu %{{.*}} {dtc.stage = 1 : i64}
// CHECK-NEXT: dtc.add %{{.*}} {dtc.stage = 1 : i64}
// CHECK-NEXT: dtc.mul %{{.*}} {dtc.stage = 1 : i64}
// CHECK-NEXT: dtc.tanh %{{.*}} {dtc.stage = 1 : i64}
// CHECK-NEXT: dtc.sigmoid %{{.*}} {dtc.stage = 1 : i64}
// CHECK-NEXT: dtc.gemm %{{.*}} {dtc.stage = 1 : i64, transB = true}
// CHECK-NEXT: dtc.softmax_cross_entropy %{{.*}} {dtc.stage = 1 : i64}
// CHECK-NEXT: return
// CHECK-NOT: dtc.stage =
// THREE-LABEL: func.func @train_step
// THREE: dtc.gemm %arg0, %{{.*}} {dtc.stage = 0 : i64, transB = true}
// THREE-NOT: dtc.stage = 0
// THREE: dtc.softmax_cross_entropy %{{.*}} {dtc.stage = 2 : i64}
dtc.param weight @big : tensor<1024x1024xf32> = dense<0.01> : tensor<1024x1024xf32>
dtc.param weight @head : tensor<10x1024xf32> = dense<0.01> : tensor<10x1024xf32>
dtc.param constant @shift : tensor<1024xf32> = dense<0.5> : tensor<1024xf32>
func.func @train_step(%x: tensor<64x1024xf32>, %labels: tensor<64xi64>) -> tensor<f32> {
  %w = dtc.param_ref @big : tensor<1024x1024xf32>
  %h = dtc.param_ref @head : tensor<10x1024xf32>
  %s = dtc.param_ref @shift : tensor<1024xf32>
  %c = dtc.constant dense<2.0> : tensor<f32>
  %0 = dtc.gemm %x, %w {transB = true} : (tensor<64x1024xf32>, tensor<1024x1024xf32>) -> tensor<64x1024xf32>
  %1 = dtc.relu %0 : tensor<64x1024xf32>
  %2 = dtc.add %1, %s : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
  %3 = dtc.mul %2, %c : (tensor<64x1024xf32>, tensor<f32>) -> tensor<64x1024xf32>
  %4 = dtc.tanh %3 : tensor<64x1024xf32>
  %5 = dtc.sigmoid %4 : tensor<64x1024xf32>
  %6 = dtc.gemm %5, %h {transB = true} : (tensor<64x1024xf32>, tensor<10x1024xf32>) -> tensor<64x10xf32>
  %7 = dtc.softmax_cross_entropy %6, %labels : (tensor<64x10xf32>, tensor<64xi64>) -> tensor<f32>
  return %7 : tensor<f32>
}

// -----

// The expensive GEMM between cheap ops: three elementwise ops over its
// 256 KiB input before it, a small GEMM and the loss after it. Two stages:
// the cut falls right before the GEMM (the side after it is the cheaper
// one to add to the GEMM's stage). Three stages: the GEMM still keeps the
// small GEMM and the loss, which cost less than the extra 256 KiB transfer
// a stage of its own would add; the cheap ops before it fill stages 0 and 1.
// CHECK-LABEL: func.func @train_step
// CHECK: dtc.relu %arg0 {dtc.stage = 0 : i64}
// CHECK-NEXT: dtc.tanh %{{.*}} {dtc.stage = 0 : i64}
// CHECK-NEXT: dtc.sigmoid %{{.*}} {dtc.stage = 0 : i64}
// CHECK-NEXT: dtc.gemm %{{.*}} {dtc.stage = 1 : i64, transB = true} : (tensor<64x1024xf32>, tensor<1024x1024xf32>)
// CHECK-NEXT: dtc.gemm %{{.*}} {dtc.stage = 1 : i64, transB = true} : (tensor<64x1024xf32>, tensor<10x1024xf32>)
// CHECK-NEXT: dtc.softmax_cross_entropy %{{.*}} {dtc.stage = 1 : i64}
// THREE-LABEL: func.func @train_step
// THREE: dtc.relu %arg0 {dtc.stage = 0 : i64}
// THREE-NEXT: dtc.tanh %{{.*}} {dtc.stage = {{[01]}} : i64}
// THREE-NEXT: dtc.sigmoid %{{.*}} {dtc.stage = 1 : i64}
// THREE-NEXT: dtc.gemm %{{.*}} {dtc.stage = 2 : i64, transB = true} : (tensor<64x1024xf32>, tensor<1024x1024xf32>)
// THREE-NEXT: dtc.gemm %{{.*}} {dtc.stage = 2 : i64, transB = true} : (tensor<64x1024xf32>, tensor<10x1024xf32>)
// THREE-NEXT: dtc.softmax_cross_entropy %{{.*}} {dtc.stage = 2 : i64}
dtc.param weight @big : tensor<1024x1024xf32> = dense<0.01> : tensor<1024x1024xf32>
dtc.param weight @head : tensor<10x1024xf32> = dense<0.01> : tensor<10x1024xf32>
func.func @train_step(%x: tensor<64x1024xf32>, %labels: tensor<64xi64>) -> tensor<f32> {
  %w = dtc.param_ref @big : tensor<1024x1024xf32>
  %h = dtc.param_ref @head : tensor<10x1024xf32>
  %0 = dtc.relu %x : tensor<64x1024xf32>
  %1 = dtc.tanh %0 : tensor<64x1024xf32>
  %2 = dtc.sigmoid %1 : tensor<64x1024xf32>
  %3 = dtc.gemm %2, %w {transB = true} : (tensor<64x1024xf32>, tensor<1024x1024xf32>) -> tensor<64x1024xf32>
  %4 = dtc.gemm %3, %h {transB = true} : (tensor<64x1024xf32>, tensor<10x1024xf32>) -> tensor<64x10xf32>
  %5 = dtc.softmax_cross_entropy %4, %labels : (tensor<64x10xf32>, tensor<64xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}

// -----

// Nothing to partition without @train_step (dtc-add-loss makes it).
// expected-error@+1 {{dtc-partition-stages needs @train_step (run dtc-add-loss first)}}
module {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %0 = dtc.relu %x : tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}
