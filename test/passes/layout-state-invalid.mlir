// dtc-layout-state refuses optimizer state that does not say whose it is.
// RUN: not dtc-opt %s -split-input-file -dtc-layout-state 2>&1 | FileCheck %s

// Optimizer state must say whose it is: a name alone is not trusted.
// CHECK: error: 'dtc.param' op optimizer state names no weight (dtc.state_of)
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param optimizer_state @w.exp_avg : tensor<4xf32>
}

// -----

// CHECK: error: 'dtc.param' op dtc.state_of names no weight: @nothing
module {
  dtc.param optimizer_state @w.exp_avg : tensor<4xf32> {dtc.state_of = @nothing}
}

// -----

// Sharded optimizer state needs the slot dtc-shard-optimizer-state gives it.
// CHECK: error: 'dtc.param' op is sharded but has no dtc.shard_slot
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32> {dtc.sharded}
  dtc.param optimizer_state @w.exp_avg : tensor<4xf32> {dtc.sharded, dtc.state_of = @w}
}

// -----

// Only float32 weights form the flat region (the updates and the all-gather
// work on floats).
// CHECK: error: 'dtc.param' op only float32 weights can be sharded
module {
  dtc.param buffer @steps : tensor<1xi64> = dense<0> : tensor<1xi64> {dtc.sharded}
}
