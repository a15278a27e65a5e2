// dtc-shard-optimizer-state refuses what it cannot shard, in one line.
// RUN: not dtc-opt %s -split-input-file -dtc-shard-optimizer-state 2>&1 | FileCheck %s

// CHECK: error: --strategy=fsdp: no weight is trained (nothing to shard)
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @train_step(%x: tensor<4xf32>) {
    return
  }
}

// -----

// CHECK: error: 'dtc.sgd_update' op keeps other optimizer state than dtc.adam_update: fsdp shards one kind of update only
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param optimizer_state @w.exp_avg : tensor<4xf32> {dtc.state_of = @w}
  dtc.param optimizer_state @w.exp_avg_sq : tensor<4xf32> {dtc.state_of = @w}
  dtc.param weight @v : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @train_step(%g: tensor<4xf32>) {
    dtc.adam_update @w, %g {exp_avg = @w.exp_avg, exp_avg_sq = @w.exp_avg_sq, lr = 1.0e-03 : f64} : tensor<4xf32>
    dtc.sgd_update @v, %g {lr = 0.1 : f64} : tensor<4xf32>
    return
  }
}

// -----

// CHECK: error: 'dtc.sgd_update' op updates @w, which is not a weight updated once
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @train_step(%g: tensor<4xf32>) {
    dtc.sgd_update @w, %g {lr = 0.1 : f64} : tensor<4xf32>
    dtc.sgd_update @w, %g {lr = 0.1 : f64} : tensor<4xf32>
    return
  }
}

// -----

// RUN: not dtc-opt %s -split-input-file -dtc-shard-optimizer-state=gradients=true 2>&1 | FileCheck %s --check-prefix=ZERO2
// ZERO2: error: 'dtc.clip_grad_norm' op --shard=gradients|parameters: clipping by global norm needs every gradient before any update (use --shard=optimizer)
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @train_step(%g: tensor<4xf32>) {
    %t = dtc.all_reduce_start %g {bucket = 0 : i64} : tensor<4xf32>
    %r = dtc.all_reduce_wait %t, %g : tensor<4xf32>
    %clip = dtc.clip_grad_norm %r {max_norm = 1.0 : f64} : tensor<4xf32> -> tensor<2xf32>
    dtc.sgd_update @w, %r clip %clip : tensor<2xf32> {lr = 0.1 : f64} : tensor<4xf32>
    return
  }
}
