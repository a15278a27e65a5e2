// dtc-partition-stages' messages print numbers as numbers (an int64 option
// once streamed as a character) and list every node of the model when a
// --split-at name is unknown, including names contained in other names.
// RUN: not dtc-opt %s -dtc-partition-stages=stages=1 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not dtc-opt %s -dtc-partition-stages=stages=8 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not dtc-opt %s "-dtc-partition-stages=split-at=/Relu stages=3" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not dtc-opt %s -dtc-partition-stages=split-at=/nope 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// ONE: error: --stages must be at least 2, got 1{{$}}
// MANY: error: the model has 5 ops to split but --stages=8 needs at least one per stage
// COUNT: error: --split-at names 1 split points, which make 2 stages, but --stages=3{{$}}
// UNKNOWN: error: --split-at: the model has no ONNX node named '/nope' (its nodes: /fc1/Gemm, /block/Relu, /Relu, /fc2/Gemm)

dtc.param weight @w1 : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @w2 : tensor<3x4xf32> = dense<0.1> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %w1 = dtc.param_ref @w1 : tensor<4x6xf32>
  %w2 = dtc.param_ref @w2 : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32> loc("/fc1/Gemm")
  %1 = dtc.relu %0 : tensor<2x4xf32> loc("/block/Relu")
  %2 = dtc.relu %1 : tensor<2x4xf32> loc("/Relu")
  %3 = dtc.gemm %2, %w2 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32> loc("/fc2/Gemm")
  %4 = dtc.softmax_cross_entropy %3, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}
