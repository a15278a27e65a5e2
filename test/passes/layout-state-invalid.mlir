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
