// dtc-partition-stages with `split-at`: each named ONNX node (an op's
// NameLoc, as the importer sets it) begins a new stage; and the errors of
// the pass's options, one RUN line each. Balanced partitions:
// partition-stages.mlir.
// RUN: dtc-opt %s -dtc-partition-stages=split-at=/relu/Relu | FileCheck %s --check-prefix=TWO
// RUN: dtc-opt %s "-dtc-partition-stages=split-at=/fc1/Gemm,/scale/Mul stages=3" | FileCheck %s --check-prefix=THREE
// RUN: not dtc-opt %s -dtc-partition-stages=split-at=/fc3/Gemm 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not dtc-opt %s -dtc-partition-stages=split-at=/flatten/Flatten 2>&1 | FileCheck %s --check-prefix=FIRST
// RUN: not dtc-opt %s -dtc-partition-stages=split-at=/fc2/Gemm,/relu/Relu 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not dtc-opt %s -dtc-partition-stages=split-at=/relu/Relu,/relu/Relu 2>&1 | FileCheck %s --check-prefix=REPEAT
// RUN: not dtc-opt %s "-dtc-partition-stages=split-at=/relu/Relu stages=3" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not dtc-opt %s -dtc-partition-stages=stages=1 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not dtc-opt %s -dtc-partition-stages 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not dtc-opt %s -dtc-partition-stages=stages=8 2>&1 | FileCheck %s --check-prefix=MANY

// The model: flatten, fc1, relu, a node the importer built from two ops
// (/scale/Mul), fc2, and the loss dtc-add-loss appended (no ONNX node).
// Seven ops to split.

// One split point, two stages: the named node and everything after it are
// stage 1. Params get no stage. The module records the node each later
// stage begins with (dtc --strategy=auto moves the cuts by these names).
// TWO: module attributes {dtc.stage_starts = ["/relu/Relu"]}
// TWO-LABEL: func.func @train_step
// TWO-NOT: dtc.stage
// TWO: dtc.flatten %arg0 {dtc.stage = 0 : i64}
// TWO-NEXT: dtc.gemm %{{.*}} {dtc.stage = 0 : i64, transB = true}
// TWO-NEXT: dtc.relu %{{.*}} {dtc.stage = 1 : i64}
// TWO-NEXT: dtc.mul %{{.*}} {dtc.stage = 1 : i64}
// TWO-NEXT: dtc.add %{{.*}} {dtc.stage = 1 : i64}
// TWO-NEXT: dtc.gemm %{{.*}} {dtc.stage = 1 : i64, transB = true}
// TWO-NEXT: dtc.softmax_cross_entropy %{{.*}} {dtc.stage = 1 : i64}

// Two split points (and a --stages that agrees): three stages, whatever the
// cost model would say. A node of two ops begins its stage at its first op
// and keeps both.
// THREE: module attributes {dtc.stage_starts = ["/fc1/Gemm", "/scale/Mul"]}
// THREE-LABEL: func.func @train_step
// THREE: dtc.flatten %arg0 {dtc.stage = 0 : i64}
// THREE-NEXT: dtc.gemm %{{.*}} {dtc.stage = 1 : i64, transB = true}
// THREE-NEXT: dtc.relu %{{.*}} {dtc.stage = 1 : i64}
// THREE-NEXT: dtc.mul %{{.*}} {dtc.stage = 2 : i64}
// THREE-NEXT: dtc.add %{{.*}} {dtc.stage = 2 : i64}
// THREE-NEXT: dtc.gemm %{{.*}} {dtc.stage = 2 : i64, transB = true}
// THREE-NEXT: dtc.softmax_cross_entropy %{{.*}} {dtc.stage = 2 : i64}

// A name the model does not have: the message lists the nodes that can
// begin a stage, in order, each once (params and unnamed ops are not nodes).
// UNKNOWN: partition-stages-split-at.mlir:{{[0-9]+}}:1: error: --split-at: the model has no ONNX node named '/fc3/Gemm' (its nodes: /flatten/Flatten, /fc1/Gemm, /relu/Relu, /scale/Mul, /fc2/Gemm)

// Splitting at the first node would leave stage 0 empty.
// FIRST: error: --split-at: '/flatten/Flatten' is the first node; stage 0 would be empty

// Split points must follow the model's order, and be distinct.
// ORDER: error: --split-at: '/relu/Relu' does not come after the previous split point; list the nodes in the model's order
// REPEAT: error: --split-at: '/relu/Relu' does not come after the previous split point; list the nodes in the model's order

// One split point makes two stages, not three.
// COUNT: error: --split-at names 1 split points, which make 2 stages, but --stages={{.*}}

// Without split points, --stages must be at least 2 (the default is 0) ...
// ONE: error: --stages must be at least 2, got {{.*}}

// ... and at most the number of ops.
// MANY: error: the model has 7 ops to split but --stages={{.*}} needs at least one per stage

dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x1x2x3xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32> loc("fc1.weight")
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32> loc("fc2.weight")
  %c = dtc.constant dense<2.0> : tensor<f32> loc("/scale/Constant")
  %0 = dtc.flatten %x : (tensor<2x1x2x3xf32>) -> tensor<2x6xf32> loc("/flatten/Flatten")
  %1 = dtc.gemm %0, %w1 {transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32> loc("/fc1/Gemm")
  %2 = dtc.relu %1 : tensor<2x4xf32> loc("/relu/Relu")
  %3 = dtc.mul %2, %c : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc("/scale/Mul")
  %4 = dtc.add %3, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/scale/Mul")
  %5 = dtc.gemm %4, %w2 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32> loc("/fc2/Gemm")
  %6 = dtc.softmax_cross_entropy %5, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %6 : tensor<f32>
}
