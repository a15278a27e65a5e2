// The dtc-group-optimizer-updates pass (CUDA target): every optimizer update
// moves, in its order, to just before the return (fsdp: before the gather of
// the updated shards); everything else keeps its place.
// RUN: dtc-opt %s -split-input-file -dtc-group-optimizer-updates | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK: %[[G2:.*]] = dtc.relu %arg1
// CHECK-NEXT: %[[G1:.*]] = dtc.tanh %arg0
// CHECK-NEXT: %[[L:.*]] = dtc.constant
// CHECK-NEXT: dtc.sgd_update @w2, %[[G2]]
// CHECK-NEXT: dtc.adam_update @w1, %[[G1]]
// CHECK-NEXT: return %[[L]]
dtc.param weight @w1 : tensor<4xf32> = dense<0.1> : tensor<4xf32>
dtc.param weight @w2 : tensor<4xf32> = dense<0.2> : tensor<4xf32>
dtc.param optimizer_state @w1.exp_avg : tensor<4xf32>
dtc.param optimizer_state @w1.exp_avg_sq : tensor<4xf32>
func.func @train_step(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
  %g2 = dtc.relu %b : tensor<4xf32>
  dtc.sgd_update @w2, %g2 {lr = 1.000000e-01 : f64} : tensor<4xf32>
  %g1 = dtc.tanh %a : tensor<4xf32>
  dtc.adam_update @w1, %g1 {exp_avg = @w1.exp_avg, exp_avg_sq = @w1.exp_avg_sq, lr = 1.000000e-03 : f64} : tensor<4xf32>
  %loss = dtc.constant dense<0.0> : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// --strategy=fsdp: the gather of the updated shards reads what the updates
// write, so they move to just before it, not past it.
// RUN: dtc-opt %s -split-input-file -dtc-group-optimizer-updates | FileCheck %s --check-prefix=FSDP
// FSDP-LABEL: func.func @train_step
// FSDP: %[[G:.*]] = dtc.relu %arg0
// FSDP-NEXT: %[[L:.*]] = dtc.constant
// FSDP-NEXT: dtc.sgd_update @w, %[[G]]
// FSDP-NEXT: dtc.gather_weight_shards [@w]
// FSDP-NEXT: return %[[L]]
dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32> {dtc.sharded}
func.func @train_step(%a: tensor<4xf32>) -> tensor<f32> {
  %g = dtc.relu %a : tensor<4xf32>
  dtc.sgd_update @w, %g {lr = 1.000000e-01 : f64} : tensor<4xf32>
  %loss = dtc.constant dense<0.0> : tensor<f32>
  dtc.gather_weight_shards [@w]
  return %loss : tensor<f32>
}
