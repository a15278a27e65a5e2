// The dtc-tensor-parallel pass (--tp=K, Megatron-style): each column/row
// layer pair of @forward is split over the K ranks of a tensor-parallel
// group. The first weight and its bias keep 1/K of their output features,
// the second weight 1/K of its input features (dtc.tp_split says which
// dimension); dtc.tp_copy enters the region and dtc.tp_reduce sums the
// partial products, before the second layer's bias. Autodiff then turns
// tp_copy into the backward all-reduce of the input's gradient.
// RUN: dtc-opt %s -split-input-file -dtc-tensor-parallel=ranks=2 -verify-diagnostics | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-tensor-parallel=ranks=2 -dtc-add-loss -dtc-differentiate -verify-diagnostics | FileCheck %s --check-prefix=GRAD
// RUN: dtc-opt %s -split-input-file -dtc-tensor-parallel=ranks=1 | FileCheck %s --check-prefix=ONE

// A classifier's hidden layer (Gemm, ReLU, Gemm, as torch exports nn.Linear),
// after a trained feature scale (so the input of the pair needs a gradient).
// CHECK-LABEL: module attributes {dtc.tensor_parallel = 2 : i64}
// CHECK-DAG: dtc.param weight @fc1.weight : tensor<4x6xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
// CHECK-DAG: dtc.param weight @fc1.bias : tensor<4xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
// CHECK-DAG: dtc.param weight @fc2.weight : tensor<3x4xf32> {dtc.tp_split = array<i64: 1, 1, 1>}
// CHECK-DAG: dtc.param weight @fc2.bias : tensor<3xf32> = dense<1.000000e+00> : tensor<3xf32>
// CHECK-DAG: dtc.param weight @scale : tensor<6xf32> = dense<2.000000e+00> : tensor<6xf32>{{$}}
// CHECK: %[[X:.*]] = dtc.tp_copy %{{.*}} : tensor<4x6xf32>
// CHECK-NEXT: %[[H:.*]] = dtc.gemm %[[X]], %{{.*}}, %{{.*}} {transB = true} : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[A:.*]] = dtc.relu %[[H]] : tensor<4x4xf32>
// CHECK-NEXT: %[[P:.*]] = dtc.gemm %[[A]], %{{.*}} {transB = true} : (tensor<4x4xf32>, tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[S:.*]] = dtc.tp_reduce %[[P]] : tensor<4x3xf32>
// CHECK-NEXT: %[[Y:.*]] = dtc.add %[[S]], %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: return %[[Y]]
// Backward: the row layer's output gradient passes g unchanged; the input's
// gradient, a partial sum on each rank, is summed by f's transpose.
// GRAD-LABEL: func.func @train_step
// GRAD: dtc.tp_reduce
// GRAD: dtc.softmax_cross_entropy
// GRAD: dtc.relu_grad
// GRAD: %[[DX:.*]] = dtc.gemm %{{.*}}, %{{.*}} : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// GRAD: %[[SUM:.*]] = dtc.tp_reduce %[[DX]] : tensor<4x6xf32>
// GRAD: dtc.mul %[[SUM]]
// GRAD: dtc.gradient @scale
// ONE-NOT: tp_
module {
  dtc.param weight @scale : tensor<6xf32> = dense<2.0> : tensor<6xf32>
  dtc.param weight @fc1.weight : tensor<8x6xf32> = dense<1.0> : tensor<8x6xf32>
  dtc.param weight @fc1.bias : tensor<8xf32> = dense<1.0> : tensor<8xf32>
  dtc.param weight @fc2.weight : tensor<3x8xf32> = dense<1.0> : tensor<3x8xf32>
  dtc.param weight @fc2.bias : tensor<3xf32> = dense<1.0> : tensor<3xf32>
  func.func @forward(%arg0: tensor<4x6xf32> {dtc.name = "input"}) -> (tensor<4x3xf32> {dtc.name = "logits"}) {
    %0 = dtc.param_ref @fc1.weight : tensor<8x6xf32>
    %1 = dtc.param_ref @fc1.bias : tensor<8xf32>
    %2 = dtc.param_ref @fc2.weight : tensor<3x8xf32>
    %3 = dtc.param_ref @fc2.bias : tensor<3xf32>
    %s = dtc.param_ref @scale : tensor<6xf32>
    %x = dtc.mul %arg0, %s : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
    %4 = dtc.gemm %x, %0, %1 {transB = true} : (tensor<4x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %5 = dtc.relu %4 : tensor<4x8xf32>
    %6 = dtc.gemm %5, %2, %3 {transB = true} : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    return %6 : tensor<4x3xf32>
  }
}

// -----

// A transformer MLP as dtc sees it after import: [batch, time, features]
// flattened around each Gemm, the bias added after a reshape, GELU between.
// Weights stored [in, out] (no transB) split along the other dimension.
// CHECK-LABEL: module attributes
// CHECK-DAG: dtc.param weight @c_fc.weight : tensor<4x8xf32> {dtc.tp_split = array<i64: 1, 1, 1>}
// CHECK-DAG: dtc.param weight @c_fc.bias : tensor<8xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
// CHECK-DAG: dtc.param weight @c_proj.weight : tensor<8x4xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
// CHECK: dtc.tp_copy %{{.*}} : tensor<6x4xf32>
// CHECK: dtc.gemm {{.*}} -> tensor<6x8xf32>
// CHECK-NEXT: dtc.reshape %{{.*}} {shape = array<i64: 2, 3, 8>} : (tensor<6x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: dtc.add %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: dtc.gelu %{{.*}} : tensor<2x3x8xf32>
// CHECK-NEXT: dtc.reshape %{{.*}} {shape = array<i64: 6, 8>}
// CHECK-NEXT: %[[P:.*]] = dtc.gemm {{.*}} -> tensor<6x4xf32>
// CHECK-NEXT: dtc.tp_reduce %[[P]] : tensor<6x4xf32>
module {
  dtc.param weight @c_fc.weight : tensor<4x16xf32>
  dtc.param weight @c_fc.bias : tensor<16xf32>
  dtc.param weight @c_proj.weight : tensor<16x4xf32>
  func.func @forward(%arg0: tensor<2x3x4xf32> {dtc.name = "x"}) -> (tensor<2x3x4xf32> {dtc.name = "y"}) {
    %0 = dtc.param_ref @c_fc.weight : tensor<4x16xf32>
    %1 = dtc.param_ref @c_fc.bias : tensor<16xf32>
    %2 = dtc.param_ref @c_proj.weight : tensor<16x4xf32>
    %3 = dtc.reshape %arg0 {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %4 = dtc.gemm %3, %0 : (tensor<6x4xf32>, tensor<4x16xf32>) -> tensor<6x16xf32>
    %5 = dtc.reshape %4 {shape = array<i64: 2, 3, 16>} : (tensor<6x16xf32>) -> tensor<2x3x16xf32>
    %6 = dtc.add %1, %5 : (tensor<16xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
    %7 = dtc.gelu %6 : tensor<2x3x16xf32>
    %8 = dtc.reshape %7 {shape = array<i64: 6, 16>} : (tensor<2x3x16xf32>) -> tensor<6x16xf32>
    %9 = dtc.gemm %8, %2 : (tensor<6x16xf32>, tensor<16x4xf32>) -> tensor<6x4xf32>
    %10 = dtc.reshape %9 {shape = array<i64: 2, 3, 4>} : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
    return %10 : tensor<2x3x4xf32>
  }
}

// -----

// A tied weight (read by two layers) is not split; with no other pair there
// is nothing to split.
// expected-error @+1 {{--tp=2: found no layers to split}}
module {
  dtc.param weight @w : tensor<8x8xf32>
  func.func @forward(%arg0: tensor<4x8xf32> {dtc.name = "x"}) -> (tensor<4x8xf32> {dtc.name = "y"}) {
    %0 = dtc.param_ref @w : tensor<8x8xf32>
    %1 = dtc.gemm %arg0, %0 {transB = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %2 = dtc.relu %1 : tensor<4x8xf32>
    %3 = dtc.param_ref @w : tensor<8x8xf32>
    %4 = dtc.gemm %2, %3 {transB = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %4 : tensor<4x8xf32>
  }
}

// -----

// K must divide a layer's features; a layer it does not divide stays whole
// (here the only candidate, so nothing can be split).
module {
  dtc.param weight @fc1.weight : tensor<5x6xf32>
  dtc.param weight @fc2.weight : tensor<3x5xf32>
  func.func @forward(%arg0: tensor<4x6xf32> {dtc.name = "input"}) -> (tensor<4x3xf32> {dtc.name = "logits"}) {
    %0 = dtc.param_ref @fc1.weight : tensor<5x6xf32>
    %1 = dtc.param_ref @fc2.weight : tensor<3x5xf32>
    // expected-error @+1 {{--tp=2: this layer has 5 output features, not divisible by 2, and no other layers can be split}}
    %2 = dtc.gemm %arg0, %0 {transB = true} : (tensor<4x6xf32>, tensor<5x6xf32>) -> tensor<4x5xf32>
    %3 = dtc.relu %2 : tensor<4x5xf32>
    %4 = dtc.gemm %3, %1 {transB = true} : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
    return %4 : tensor<4x3xf32>
  }
}

// -----

// Three Linear layers with ReLUs (LeNet's classifier): the first two form a
// pair; the third stays whole on every rank (a layer ends at most one pair).
// CHECK-LABEL: module attributes
// CHECK-DAG: dtc.param weight @fc1.weight : tensor<4x6xf32> {dtc.tp_split = array<i64: 0, 1, 1>}
// CHECK-DAG: dtc.param weight @fc2.weight : tensor<5x4xf32> {dtc.tp_split = array<i64: 1, 1, 1>}
// CHECK-DAG: dtc.param weight @fc3.weight : tensor<3x5xf32>{{$}}
// CHECK: dtc.tp_reduce
// CHECK-NOT: dtc.tp_
// CHECK: return
module {
  dtc.param weight @fc1.weight : tensor<8x6xf32>
  dtc.param weight @fc2.weight : tensor<5x8xf32>
  dtc.param weight @fc3.weight : tensor<3x5xf32>
  func.func @forward(%arg0: tensor<4x6xf32> {dtc.name = "input"}) -> (tensor<4x3xf32> {dtc.name = "logits"}) {
    %0 = dtc.param_ref @fc1.weight : tensor<8x6xf32>
    %1 = dtc.param_ref @fc2.weight : tensor<5x8xf32>
    %2 = dtc.param_ref @fc3.weight : tensor<3x5xf32>
    %3 = dtc.gemm %arg0, %0 {transB = true} : (tensor<4x6xf32>, tensor<8x6xf32>) -> tensor<4x8xf32>
    %4 = dtc.relu %3 : tensor<4x8xf32>
    %5 = dtc.gemm %4, %1 {transB = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32>
    %6 = dtc.relu %5 : tensor<4x5xf32>
    %7 = dtc.gemm %6, %2 {transB = true} : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
    return %7 : tensor<4x3xf32>
  }
}

// -----

// Attention with a fused Q/K/V projection (nanoGPT's c_attn: [3 x heads x
// head_dim, features]) is split by heads: each rank keeps its heads' rows
// of each of the 3 blocks (dtc.tp_split = [dim, outer 3, inner 1]), the
// split, reshapes, transposes, batched matmuls and the softmax work on its
// heads only, and the output projection is split by rows: the rank's heads'
// columns [dim 1, outer 1, inner head_dim 2].
// CHECK-LABEL: module attributes
// CHECK-DAG: dtc.param weight @c_attn.weight : tensor<6x4xf32> {dtc.tp_split = array<i64: 0, 3, 1>}
// CHECK-DAG: dtc.param weight @c_attn.bias : tensor<6xf32> {dtc.tp_split = array<i64: 0, 3, 1>}
// CHECK-DAG: dtc.param weight @c_proj.weight : tensor<4x2xf32> {dtc.tp_split = array<i64: 1, 1, 2>}
// CHECK: dtc.tp_copy %arg0
// CHECK: dtc.split %{{.*}} {axis = 1 : i64, sizes = array<i64: 2, 2, 2>} : (tensor<2x6xf32>)
// CHECK: dtc.reshape %{{.*}} {shape = array<i64: 2, 1, 2>}
// CHECK: dtc.matmul %{{.*}}, %{{.*}} : (tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
// CHECK-NEXT: dtc.softmax %{{.*}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
// CHECK: dtc.reshape %{{.*}} {shape = array<i64: 2, 2>} : (tensor<2x1x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[P:.*]] = dtc.gemm %{{.*}}, %{{.*}} {transB = true} : (tensor<2x2xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: dtc.tp_reduce %[[P]]
module {
  dtc.param weight @c_attn.weight : tensor<12x4xf32>
  dtc.param weight @c_attn.bias : tensor<12xf32>
  dtc.param weight @c_proj.weight : tensor<4x4xf32>
  func.func @forward(%x: tensor<2x4xf32> {dtc.name = "x"}) -> (tensor<2x4xf32> {dtc.name = "y"}) {
    %w = dtc.param_ref @c_attn.weight : tensor<12x4xf32>
    %b = dtc.param_ref @c_attn.bias : tensor<12xf32>
    %wp = dtc.param_ref @c_proj.weight : tensor<4x4xf32>
    %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x4xf32>, tensor<12x4xf32>) -> tensor<2x12xf32>
    %1 = dtc.add %b, %0 : (tensor<12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
    %2:3 = dtc.split %1 {axis = 1 : i64, sizes = array<i64: 4, 4, 4>} : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    %q = dtc.reshape %2#0 {shape = array<i64: 2, 2, 2>} : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %qt = dtc.transpose %q {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %k = dtc.reshape %2#1 {shape = array<i64: 2, 2, 2>} : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %kt = dtc.transpose %k {perm = array<i64: 1, 2, 0>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %v = dtc.reshape %2#2 {shape = array<i64: 2, 2, 2>} : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %vt = dtc.transpose %v {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %s = dtc.matmul %qt, %kt : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %p = dtc.softmax %s : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %o = dtc.matmul %p, %vt : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %ot = dtc.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %y = dtc.reshape %ot {shape = array<i64: 2, 4>} : (tensor<2x2x2xf32>) -> tensor<2x4xf32>
    %z = dtc.gemm %y, %wp {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    return %z : tensor<2x4xf32>
  }
}

// -----

// A softmax across the heads would mix the ranks' heads: nothing is split.
// expected-error @+1 {{--tp=2: found no layers to split}}
module {
  dtc.param weight @c_attn.weight : tensor<12x4xf32>
  dtc.param weight @c_attn.bias : tensor<12xf32>
  dtc.param weight @c_proj.weight : tensor<4x4xf32>
  func.func @forward(%x: tensor<2x4xf32> {dtc.name = "x"}) -> (tensor<2x4xf32> {dtc.name = "y"}) {
    %w = dtc.param_ref @c_attn.weight : tensor<12x4xf32>
    %b = dtc.param_ref @c_attn.bias : tensor<12xf32>
    %wp = dtc.param_ref @c_proj.weight : tensor<4x4xf32>
    %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x4xf32>, tensor<12x4xf32>) -> tensor<2x12xf32>
    %1 = dtc.add %b, %0 : (tensor<12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
    %2:3 = dtc.split %1 {axis = 1 : i64, sizes = array<i64: 4, 4, 4>} : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    %q = dtc.reshape %2#0 {shape = array<i64: 2, 2, 2>} : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %qt = dtc.transpose %q {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %k = dtc.reshape %2#1 {shape = array<i64: 2, 2, 2>} : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %kt = dtc.transpose %k {perm = array<i64: 1, 2, 0>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %v = dtc.reshape %2#2 {shape = array<i64: 2, 2, 2>} : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %vt = dtc.transpose %v {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %s = dtc.matmul %qt, %kt : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %p = dtc.softmax %s {axis = 0 : i64} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %o = dtc.matmul %p, %vt : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %ot = dtc.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %y = dtc.reshape %ot {shape = array<i64: 2, 4>} : (tensor<2x2x2xf32>) -> tensor<2x4xf32>
    %z = dtc.gemm %y, %wp {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    return %z : tensor<2x4xf32>
  }
}
