// dtc-tensor-parallel (--tp=K) splits a language model's token embedding by
// vocabulary (Megatron-LM's VocabParallelEmbedding): rank r holds rows
// [r V/K, (r+1) V/K) of the table; dtc.tp_vocab_range gives each id's local
// row and a mask that zeroes the ids other ranks hold, and dtc.tp_reduce
// sums the group's lookups. An output layer with the vocabulary's features
// is split by columns; its logits are gathered whole (dtc.tp_gather) for
// the loss. A table K does not divide stays whole (dtc.tp_whole says why);
// so does one looked up by constant indices (a position embedding).
// RUN: dtc-opt %s -split-input-file -dtc-tensor-parallel=ranks=2 | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-tensor-parallel=ranks=2 -dtc-add-loss -dtc-differentiate | FileCheck %s --check-prefix=GRAD
// RUN: dtc-opt %s -split-input-file -dtc-tensor-parallel=ranks=2 -dtc-add-loss=label-smoothing=0.1 -dtc-differentiate | FileCheck %s --check-prefix=SMOOTH
// RUN: dtc-opt %s -split-input-file -dtc-tensor-parallel=ranks=4 | FileCheck %s --check-prefix=FOUR

// CHECK-LABEL: module attributes {dtc.tensor_parallel = 2 : i64}
// CHECK-DAG: dtc.param weight @wte : tensor<3x4xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
// CHECK-DAG: dtc.param weight @wpe : tensor<4x4xf32> = dense<1.000000e+00> : tensor<4x4xf32>{{$}}
// CHECK-DAG: dtc.param weight @head : tensor<4x3xf32> {dtc.tp_split = array<i64: 1, 1, 1>}
// CHECK: %[[LOCAL:.*]], %[[MASK:.*]] = dtc.tp_vocab_range %arg0 {rows = 3 : i64, vocab = 6 : i64} : tensor<2x3xi64> -> tensor<2x3xi64>, tensor<2x3x1xf32>
// CHECK-NEXT: %[[ROWS:.*]] = dtc.gather %{{.*}}, %[[LOCAL]] : (tensor<3x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[MASKED:.*]] = dtc.mul %[[ROWS]], %[[MASK]] : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[E:.*]] = dtc.tp_reduce %[[MASKED]] : tensor<2x3x4xf32>
// CHECK: dtc.gather %{{.*}}, %{{.*}} : (tensor<4x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK: dtc.add %[[E]]
// CHECK: dtc.tp_reduce %{{.*}} : tensor<6x4xf32>
// CHECK: %[[X:.*]] = dtc.tp_copy %{{.*}} : tensor<6x4xf32>
// CHECK-NEXT: dtc.gemm %[[X]], %{{.*}} : (tensor<6x4xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT: %[[L:.*]] = dtc.reshape %{{.*}} {shape = array<i64: 2, 3, 3>} : (tensor<6x3xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT: %[[Y:.*]] = dtc.tp_gather %[[L]] : tensor<2x3x3xf32> -> tensor<2x3x6xf32>
// CHECK-NEXT: return %[[Y]] : tensor<2x3x6xf32>

// Backward: the cross-entropy of the split logits is computed without
// gathering them (dtc.tp_softmax_cross_entropy); its gradient is this
// rank's columns, from the rows' log-sum-exp, with no communication; the
// input's gradient (a partial sum over the vocabulary) is summed over the
// group; the table's gradient goes to the local rows at the local ids,
// zero where masked, and no gradient reaches the ids.
// GRAD-LABEL: func.func @train_step
// GRAD: %[[LOCAL:.*]], %[[MASK:.*]] = dtc.tp_vocab_range
// GRAD-NOT: dtc.tp_gather
// GRAD: %[[LOGITS:.*]] = dtc.reshape %{{.*}} {shape = array<i64: 2, 3, 3>} : (tensor<6x3xf32>) -> tensor<2x3x3xf32>
// GRAD-NEXT: %[[LOSS:.*]], %[[LSE:.*]] = dtc.tp_softmax_cross_entropy %[[LOGITS]], %arg1 {vocab = 6 : i64} : tensor<2x3x3xf32>, tensor<2x3xi64> -> tensor<f32>, tensor<2x3xf32>
// GRAD-NOT: dtc.tp_gather
// GRAD-NOT: dtc.softmax_cross_entropy
// GRAD: %[[DL:.*]] = dtc.tp_softmax_cross_entropy_grad %[[LOGITS]], %arg1, %[[LSE]], %{{.*}} {vocab = 6 : i64} : tensor<2x3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3x3xf32>
// GRAD-NOT: dtc.tp_slice
// GRAD-NEXT: %[[DL2:.*]] = dtc.reshape %[[DL]] {shape = array<i64: 6, 3>}
// GRAD-NEXT: %[[PX:.*]] = dtc.gemm %[[DL2]], %{{.*}} {transB = true} : (tensor<6x3xf32>, tensor<4x3xf32>) -> tensor<6x4xf32>
// GRAD-NEXT: %[[DW:.*]] = dtc.gemm %{{.*}}, %[[DL2]] {transA = true} : (tensor<6x4xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
// GRAD-NEXT: dtc.gradient @head, %[[DW]] : tensor<4x3xf32>
// GRAD-NEXT: dtc.tp_reduce %[[PX]] : tensor<6x4xf32>
// GRAD: %[[DM:.*]] = dtc.mul %{{.*}}, %[[MASK]] : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
// GRAD-NEXT: %[[DT:.*]] = dtc.gather_grad %[[DM]], %[[LOCAL]] {data_shape = array<i64: 3, 4>} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<3x4xf32>
// GRAD-NEXT: dtc.gradient @wte, %[[DT]] : tensor<3x4xf32>

// The evaluation counts correct rows from the whole logits: it gathers them.
// GRAD-LABEL: func.func @eval_step
// GRAD: %[[Y:.*]] = dtc.tp_gather %{{.*}} : tensor<2x3x3xf32> -> tensor<2x3x6xf32>
// GRAD-NEXT: dtc.softmax_cross_entropy %[[Y]], %arg1
// GRAD-NEXT: dtc.count_correct %[[Y]], %arg1

// Label smoothing has no parallel form: the logits are gathered for the loss
// and its gradient sliced, as before.
// SMOOTH-LABEL: func.func @train_step
// SMOOTH-NOT: dtc.tp_softmax_cross_entropy
// SMOOTH: %[[Y:.*]] = dtc.tp_gather %{{.*}} : tensor<2x3x3xf32> -> tensor<2x3x6xf32>
// SMOOTH-NEXT: dtc.softmax_cross_entropy %[[Y]], %arg1 {label_smoothing = 1.000000e-01 : f64}
// SMOOTH-NOT: dtc.tp_softmax_cross_entropy
// SMOOTH: dtc.tp_slice %{{.*}} : tensor<2x3x6xf32> -> tensor<2x3x3xf32>

// Four ranks: 6 rows and 6 output features are not divisible by 4, so the
// table and the output layer stay whole; the MLP pair splits.
// FOUR-LABEL: module attributes {dtc.tensor_parallel = 4 : i64}
// FOUR-DAG: dtc.param weight @wte : tensor<6x4xf32> {dtc.tp_whole = "6 rows, not divisible by 4"}
// FOUR-DAG: dtc.param weight @head : tensor<4x6xf32> = dense
// FOUR-DAG: dtc.param weight @fc.weight : tensor<4x2xf32> {dtc.tp_split = array<i64: 1, 1, 1>}
// FOUR-NOT: tp_vocab_range
// FOUR-NOT: tp_gather
module {
  dtc.param weight @wte : tensor<6x4xf32>
  dtc.param weight @wpe : tensor<4x4xf32> = dense<1.0> : tensor<4x4xf32>
  dtc.param weight @fc.weight : tensor<4x8xf32> = dense<1.0> : tensor<4x8xf32>
  dtc.param weight @proj.weight : tensor<8x4xf32> = dense<1.0> : tensor<8x4xf32>
  dtc.param weight @head : tensor<4x6xf32> = dense<1.0> : tensor<4x6xf32>
  func.func @forward(%arg0: tensor<2x3xi64> {dtc.name = "tokens"}) -> (tensor<2x3x6xf32> {dtc.name = "logits"}) {
    %t = dtc.param_ref @wte : tensor<6x4xf32>
    %p = dtc.param_ref @wpe : tensor<4x4xf32>
    %w1 = dtc.param_ref @fc.weight : tensor<4x8xf32>
    %w2 = dtc.param_ref @proj.weight : tensor<8x4xf32>
    %w = dtc.param_ref @head : tensor<4x6xf32>
    %pos = dtc.constant dense<[0, 1, 2]> : tensor<3xi64>
    %e = dtc.gather %t, %arg0 : (tensor<6x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %q = dtc.gather %p, %pos : (tensor<4x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    %x = dtc.add %e, %q : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
    %f = dtc.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %h = dtc.gemm %f, %w1 : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %a = dtc.relu %h : tensor<6x8xf32>
    %m = dtc.gemm %a, %w2 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
    %s = dtc.add %f, %m : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %l = dtc.gemm %s, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
    %y = dtc.reshape %l {shape = array<i64: 2, 3, 6>} : (tensor<6x6xf32>) -> tensor<2x3x6xf32>
    return %y : tensor<2x3x6xf32>
  }
}

// -----

// A tied table (GPT-2 reads the embedding's weight again, transposed, as
// its LM head): one split serves both readers, rows [r V/K, (r+1) V/K) of
// the table are the head's output features of this rank; the head begins
// a region of its own, and its logits are gathered at the output (the
// cross-entropy takes them split). Its gradient adds the lookup's rows and
// the head's, both local.
// CHECK-LABEL: module attributes {dtc.tensor_parallel = 2 : i64}
// CHECK-DAG: dtc.param weight @wte : tensor<4x4xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
// CHECK-DAG: dtc.param weight @fc.weight : tensor<4x4xf32> {dtc.tp_split = array<i64: 1, 1, 1>}
// CHECK: %[[T:.*]] = dtc.param_ref @wte : tensor<4x4xf32>
// CHECK: dtc.tp_vocab_range %arg0 {rows = 4 : i64, vocab = 8 : i64}
// CHECK: dtc.tp_reduce %{{.*}} : tensor<6x4xf32>
// CHECK: %[[X:.*]] = dtc.tp_copy %{{.*}} : tensor<6x4xf32>
// CHECK-NEXT: %[[L:.*]] = dtc.gemm %[[X]], %[[T]] {transB = true} : (tensor<6x4xf32>, tensor<4x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %[[Y:.*]] = dtc.tp_gather %[[L]] : tensor<6x4xf32> -> tensor<6x8xf32>
// CHECK-NEXT: return %[[Y]] : tensor<6x8xf32>
// GRAD-LABEL: func.func @train_step
// GRAD: dtc.tp_softmax_cross_entropy %{{.*}}, %arg1 {vocab = 8 : i64} : tensor<6x4xf32>
// GRAD: dtc.gather_grad %{{.*}}, %{{.*}} {data_shape = array<i64: 4, 4>}
// GRAD: dtc.gradient @wte, %{{.*}} : tensor<4x4xf32>
// Four ranks: 2 of the 8 rows each.
// FOUR-LABEL: module attributes {dtc.tensor_parallel = 4 : i64}
// FOUR-DAG: dtc.param weight @wte : tensor<2x4xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
module {
  dtc.param weight @wte : tensor<8x4xf32> = dense<1.0> : tensor<8x4xf32>
  dtc.param weight @fc.weight : tensor<4x8xf32> = dense<1.0> : tensor<4x8xf32>
  dtc.param weight @proj.weight : tensor<8x4xf32> = dense<1.0> : tensor<8x4xf32>
  func.func @forward(%arg0: tensor<2x3xi64> {dtc.name = "tokens"}) -> (tensor<6x8xf32> {dtc.name = "logits"}) {
    %t = dtc.param_ref @wte : tensor<8x4xf32>
    %w1 = dtc.param_ref @fc.weight : tensor<4x8xf32>
    %w2 = dtc.param_ref @proj.weight : tensor<8x4xf32>
    %e = dtc.gather %t, %arg0 : (tensor<8x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %f = dtc.reshape %e {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %h = dtc.gemm %f, %w1 : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %a = dtc.relu %h : tensor<6x8xf32>
    %m = dtc.gemm %a, %w2 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
    %s = dtc.add %f, %m : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %l = dtc.gemm %s, %t {transB = true} : (tensor<6x4xf32>, tensor<8x4xf32>) -> tensor<6x8xf32>
    return %l : tensor<6x8xf32>
  }
}

// -----

// A tied table whose output layer's logits are not the model's output (a
// whole tensor is added to them): the head cannot be split by vocabulary,
// so neither is the table (dtc.tp_whole says why); the MLP pair still is.
// CHECK-LABEL: module attributes {dtc.tensor_parallel = 2 : i64}
// CHECK-DAG: dtc.param weight @wte : tensor<8x4xf32> = dense<1.000000e+00> : tensor<8x4xf32> {dtc.tp_whole = "tied to an output layer whose logits are not the model's output"}
// CHECK-DAG: dtc.param weight @fc.weight : tensor<4x4xf32> {dtc.tp_split = array<i64: 1, 1, 1>}
// CHECK-NOT: dtc.tp_vocab_range
// CHECK-NOT: dtc.tp_gather
// CHECK: return
module {
  dtc.param weight @wte : tensor<8x4xf32> = dense<1.0> : tensor<8x4xf32>
  dtc.param weight @fc.weight : tensor<4x8xf32> = dense<1.0> : tensor<4x8xf32>
  dtc.param weight @proj.weight : tensor<8x4xf32> = dense<1.0> : tensor<8x4xf32>
  func.func @forward(%arg0: tensor<2x3xi64> {dtc.name = "tokens"}, %prior: tensor<6x8xf32> {dtc.name = "prior"}) -> (tensor<6x8xf32> {dtc.name = "logits"}) {
    %t = dtc.param_ref @wte : tensor<8x4xf32>
    %w1 = dtc.param_ref @fc.weight : tensor<4x8xf32>
    %w2 = dtc.param_ref @proj.weight : tensor<8x4xf32>
    %e = dtc.gather %t, %arg0 : (tensor<8x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %f = dtc.reshape %e {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %h = dtc.gemm %f, %w1 : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %a = dtc.relu %h : tensor<6x8xf32>
    %m = dtc.gemm %a, %w2 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
    %s = dtc.add %f, %m : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %l = dtc.gemm %s, %t {transB = true} : (tensor<6x4xf32>, tensor<8x4xf32>) -> tensor<6x8xf32>
    %y = dtc.add %l, %prior : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
    return %y : tensor<6x8xf32>
  }
}
