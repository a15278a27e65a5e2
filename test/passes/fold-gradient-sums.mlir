// The dtc-fold-gradient-sums pass: sums of weight-gradient GEMMs accumulate
// inside the GEMM, and with `batch` become one GEMM over all micro-batches.
// RUN: dtc-opt %s -split-input-file -dtc-fold-gradient-sums | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-fold-gradient-sums=batch=true | FileCheck %s --check-prefix=BATCH
// RUN: dtc-opt %s -split-input-file -dtc-fold-gradient-sums -dtc-plan-memory | FileCheck %s --check-prefix=PLAN

// Three micro-batches' products of one weight, summed and scaled by 1/3: each
// later product is added into the running sum by its GEMM (beta = 1), and
// the scale becomes the last GEMM's alpha and beta.
// CHECK-LABEL: func.func @stage0_step
// CHECK: %[[G0:.*]] = dtc.gemm %arg0, %arg1 {transA = true}
// CHECK-NEXT: %[[G1:.*]] = dtc.gemm %arg2, %arg3, %[[G0]] {transA = true}
// CHECK-NEXT: %[[G2:.*]] = dtc.gemm %arg4, %arg5, %[[G1]] {alpha = 0.333333343 : f32, beta = 0.333333343 : f32, transA = true}
// CHECK-NOT: dtc.add
// CHECK-NOT: dtc.mul
// CHECK: dtc.gradient @w, %[[G2]]
// With batch: one GEMM over the concatenated micro-batches, alpha = 1/3.
// BATCH-LABEL: func.func @stage0_step
// BATCH: %[[DY:.*]] = dtc.concat %arg0, %arg2, %arg4 {axis = 0 : i64} : {{.*}} -> tensor<12x3xf32>
// BATCH-NEXT: %[[X:.*]] = dtc.concat %arg1, %arg3, %arg5 {axis = 0 : i64} : {{.*}} -> tensor<12x5xf32>
// BATCH-NEXT: %[[G:.*]] = dtc.gemm %[[DY]], %[[X]] {alpha = 0.333333343 : f32, transA = true}
// BATCH-NOT: dtc.add
// BATCH: dtc.gradient @w, %[[G]]
// The accumulating GEMMs write in place: all three share one arena slot.
// PLAN-LABEL: func.func @stage0_step
// PLAN-SAME: dtc.arena_bytes = 64
// PLAN: dtc.gemm %arg0, %arg1 {dtc.arena_offsets = array<i64: [[#OFF:]]>
// PLAN-NEXT: dtc.gemm %arg2, %arg3, %{{.*}} {dtc.arena_offsets = array<i64: [[#OFF]]>
// PLAN-NEXT: dtc.gemm %arg4, %arg5, %{{.*}} {alpha = {{.*}}, dtc.arena_offsets = array<i64: [[#OFF]]>
dtc.param weight @w : tensor<3x5xf32> = dense<0.1> : tensor<3x5xf32>
func.func @stage0_step(%dy0: tensor<4x3xf32>, %x0: tensor<4x5xf32>, %dy1: tensor<4x3xf32>,
                       %x1: tensor<4x5xf32>, %dy2: tensor<4x3xf32>, %x2: tensor<4x5xf32>) {
  %third = dtc.constant dense<0.333333343> : tensor<f32>
  %g0 = dtc.gemm %dy0, %x0 {transA = true} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %g1 = dtc.gemm %dy1, %x1 {transA = true} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %s1 = dtc.add %g0, %g1 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %g2 = dtc.gemm %dy2, %x2 {transA = true} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %s2 = dtc.add %s1, %g2 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %mean = dtc.mul %s2, %third : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  dtc.gradient @w, %mean : tensor<3x5xf32>
  return
}

// -----

// A product also read elsewhere (here: returned) is not folded: the GEMM
// would overwrite a value someone still reads.
// CHECK-LABEL: func.func @shared
// CHECK: dtc.add
// BATCH-LABEL: func.func @shared
// BATCH: dtc.add
func.func @shared(%dy0: tensor<4x3xf32>, %x0: tensor<4x5xf32>, %acc: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %g0 = dtc.gemm %dy0, %x0 {transA = true} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %s = dtc.add %acc, %g0 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %t = dtc.add %s, %g0 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %t : tensor<3x5xf32>
}
