// The dtc-shard-optimizer-state pass with `gradients` (--shard=gradients,
// ZeRO-2): each bucket's gradients die as soon as its updates can run.
// RUN: dtc-opt %s -dtc-shard-optimizer-state=gradients=true | FileCheck %s
// --shard=gradients (ZeRO-2): bucket 0's wait and update move up to where
// bucket 1 starts, so its gradients die there. Bucket 1's weight @v is read
// after bucket 2 starts (as a tied weight would be): its wait stays after
// that read, its update follows the wait directly. The last bucket stays at
// the end.
// CHECK-LABEL: module attributes {dtc.shard_level = "gradients", dtc.shard_slots = 0 : i64, dtc.strategy = "fsdp"} {
// CHECK: func.func @train_step(%[[GW:.*]]: tensor<4xf32>, %[[GV:.*]]: tensor<4xf32>, %[[GU:.*]]: tensor<4xf32>)
// CHECK: %[[T0:.*]] = dtc.all_reduce_start %[[GW]] {bucket = 0 : i64, dtc.sharded}
// CHECK-NEXT: %[[V:.*]] = dtc.param_ref @v
// CHECK-NEXT: %[[R0:.*]] = dtc.all_reduce_wait %[[T0]], %[[GW]]
// CHECK-NEXT: dtc.sgd_update @w, %[[R0]]
// CHECK-NEXT: %[[T1:.*]] = dtc.all_reduce_start %[[GV]] {bucket = 1 : i64, dtc.sharded}
// CHECK-NEXT: %[[T2:.*]] = dtc.all_reduce_start %[[GU]] {bucket = 2 : i64, dtc.sharded}
// CHECK-NEXT: dtc.add %[[V]], %[[V]]
// CHECK-NEXT: %[[R1:.*]] = dtc.all_reduce_wait %[[T1]], %[[GV]]
// CHECK-NEXT: dtc.sgd_update @v, %[[R1]]
// CHECK-NEXT: %[[R2:.*]] = dtc.all_reduce_wait %[[T2]], %[[GU]]
// CHECK-NEXT: dtc.sgd_update @u, %[[R2]]
// CHECK-NEXT: dtc.gather_weight_shards [@w, @v, @u]
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param weight @v : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param weight @u : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @train_step(%gw: tensor<4xf32>, %gv: tensor<4xf32>, %gu: tensor<4xf32>) {
    %t0 = dtc.all_reduce_start %gw {bucket = 0 : i64} : tensor<4xf32>
    %v = dtc.param_ref @v : tensor<4xf32>
    %t1 = dtc.all_reduce_start %gv {bucket = 1 : i64} : tensor<4xf32>
    %t2 = dtc.all_reduce_start %gu {bucket = 2 : i64} : tensor<4xf32>
    %late = dtc.add %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %rw = dtc.all_reduce_wait %t0, %gw : tensor<4xf32>
    %rv = dtc.all_reduce_wait %t1, %gv : tensor<4xf32>
    %ru = dtc.all_reduce_wait %t2, %gu : tensor<4xf32>
    dtc.sgd_update @w, %rw {lr = 0.1 : f64} : tensor<4xf32>
    dtc.sgd_update @v, %rv {lr = 0.1 : f64} : tensor<4xf32>
    dtc.sgd_update @u, %ru {lr = 0.1 : f64} : tensor<4xf32>
    return
  }
}
