// The dtc-add-optimizer pass: dtc.gradient -> optimizer updates and state.
// RUN: dtc-opt %s -dtc-add-optimizer="optimizer=sgd lr=0.1 momentum=0.9 weight-decay=0.0001 nesterov=true" | FileCheck %s --check-prefix=SGD
// RUN: dtc-opt %s -dtc-add-optimizer="optimizer=sgd lr=0.05" | FileCheck %s --check-prefix=PLAIN
// RUN: dtc-opt %s -dtc-add-optimizer="optimizer=adamw lr=0.001 beta1=0.8 weight-decay=0.01" | FileCheck %s --check-prefix=ADAMW
// RUN: not dtc-opt %s -dtc-add-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=BAD-NAME
// RUN: not dtc-opt %s -dtc-add-optimizer="optimizer=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=BAD-NESTEROV
// RUN: not dtc-opt %s -dtc-add-optimizer="lr=-1" 2>&1 | FileCheck %s --check-prefix=BAD-LR

// SGD with momentum keeps a velocity per weight, declared after the weight;
// the update replaces the dtc.gradient in place (same order).
// SGD: dtc.param weight @w1
// SGD-NEXT: dtc.param optimizer_state @w1.momentum_buffer : tensor<4xf32> {dtc.state_of = @w1}{{$}}
// SGD: dtc.param weight @w2
// SGD-NEXT: dtc.param optimizer_state @w2.momentum_buffer : tensor<2x2xf32> {dtc.state_of = @w2}{{$}}
// SGD-NOT: dtc.param optimizer_state @frozen
// SGD-LABEL: func.func @train_step
// SGD: dtc.sgd_update @w2, %arg1 {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = @w2.momentum_buffer, nesterov = true, weight_decay = 1.000000e-04 : f64}
// SGD-NEXT: dtc.sgd_update @w1, %arg0
// SGD-NOT: dtc.gradient

// Plain SGD has no state.
// PLAIN-NOT: optimizer_state
// PLAIN: dtc.sgd_update @w2, %arg1 {lr = 5.000000e-02 : f64} : tensor<2x2xf32>

// AdamW: two moments per weight, decoupled weight decay.
// ADAMW: dtc.param weight @w1
// ADAMW-NEXT: dtc.param optimizer_state @w1.exp_avg
// ADAMW-NEXT: dtc.param optimizer_state @w1.exp_avg_sq
// ADAMW: dtc.adam_update @w2, %arg1 {beta1 = 8.000000e-01 : f64, decoupled = true, exp_avg = @w2.exp_avg, exp_avg_sq = @w2.exp_avg_sq, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64}

// BAD-NAME: error: --optimizer: unknown optimizer 'lion' (expected sgd, adam or adamw)
// BAD-NESTEROV: error: --nesterov needs a positive --momentum and zero dampening (as torch.optim.SGD)
// BAD-LR: error: --lr must be positive, got -1

dtc.param weight @w1 : tensor<4xf32> = dense<0.5> : tensor<4xf32>
dtc.param weight @w2 : tensor<2x2xf32> = dense<0.5> : tensor<2x2xf32>
dtc.param constant @frozen : tensor<4xf32> = dense<0.5> : tensor<4xf32>
func.func @train_step(%g1: tensor<4xf32>, %g2: tensor<2x2xf32>) {
  dtc.gradient @w2, %g2 : tensor<2x2xf32>
  dtc.gradient @w1, %g1 : tensor<4xf32>
  return
}
