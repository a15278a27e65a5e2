// KNOWN BUGS of dtc-partition-stages' messages (XFAIL until fixed; then
// delete the XFAIL line). Written as the messages should read.
//
// 1. The value of --stages is printed as a character, not a number: the
//    pass streams its `Option<int64_t> stages` into the diagnostic, which
//    picks the `char` overload. `stages=1` prints "got \x01", `stages=8`
//    prints "--stages=\x08", `stages=3` prints "--stages=\x03" (the dtc
//    driver shows the same bytes: `dtc mlp.onnx --strategy=pipeline
//    --stages=9 --micro-batches=16` says "--stages=<TAB> needs ...").
//    Expected: the decimal number.
// 2. The list of nodes in the unknown-name error leaves out a node whose
//    name is a substring of a node listed before it (the de-duplication
//    uses StringRef::contains on the joined list): here '/Relu' exists
//    (split-at=/Relu works) but is missing after '/block/Relu'.
//
// XFAIL: *
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
