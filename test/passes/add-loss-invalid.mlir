// dtc-add-loss refuses models it cannot put a loss on, naming the problem.
// RUN: dtc-opt %s -split-input-file -dtc-add-loss -verify-diagnostics

// Cross-entropy needs [batch, ..., classes] logits.
// expected-error@+1 {{--loss=cross-entropy needs float logits of rank >= 2 ([batch, ..., classes]), but the model's first output is 'tensor<8xf32>'}}
func.func @forward(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

// No @forward at all.
// expected-error@+1 {{dtc-add-loss needs a func @forward with at least one result}}
module {
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}
