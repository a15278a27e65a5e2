// dtc-add-loss refuses an ambiguous or misnamed model loss, naming the problem.
// RUN: dtc-opt %s -split-input-file -dtc-add-loss -verify-diagnostics
// RUN: not dtc-opt %s -split-input-file -dtc-add-loss=loss=output:nothing 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: error: --loss=output:nothing: the model has no output named 'nothing'

// Two scalar outputs computed from the labels.
// expected-error@+1 {{the model has 2 scalar outputs computed from its labels; name the loss with --loss=output:NAME}}
func.func @forward(%x: tensor<2x3xf32>, %y: tensor<2xi64>) -> (tensor<f32>, tensor<f32>) {
  %0 = dtc.softmax_cross_entropy %x, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %1 = dtc.softmax_cross_entropy %x, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}
