// Round trip of the pipeline ops (DtcPipelineOps.td): parse, verify, print,
// parse the print again; the generic form too.
// RUN: dtc-opt %s | dtc-opt | FileCheck %s
// RUN: dtc-opt %s --mlir-print-op-generic | dtc-opt | FileCheck %s

// One stage's step, as dtc-schedule-pipeline writes it: a marker per phase,
// slices of the whole batch, an asynchronous send waited for later, a
// blocking receive.
// CHECK-LABEL: func @stage_step
func.func @stage_step(%x: tensor<64x784xf32>, %labels: tensor<64xi64>) -> tensor<16x128xf32> {
  // CHECK: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
  dtc.schedule_phase {phase = "forward", micro_batch = 0 : i64}
  // Micro-batch 3 of 4: a quarter of the rows; the result type is inferred.
  // CHECK-NEXT: %[[X3:.*]] = dtc.micro_batch %{{.*}} {count = 4 : i64, index = 3 : i64} : (tensor<64x784xf32>) -> tensor<16x784xf32>
  %x3 = dtc.micro_batch %x {index = 3 : i64, count = 4 : i64} : (tensor<64x784xf32>) -> tensor<16x784xf32>
  // Rank-1 inputs (labels) are sliced the same way.
  // CHECK-NEXT: dtc.micro_batch %{{.*}} {count = 4 : i64, index = 0 : i64} : (tensor<64xi64>) -> tensor<16xi64>
  %l0 = dtc.micro_batch %labels {index = 0 : i64, count = 4 : i64} : (tensor<64xi64>) -> tensor<16xi64>
  // One micro-batch is the whole batch.
  // CHECK-NEXT: dtc.micro_batch %{{.*}} {count = 1 : i64, index = 0 : i64} : (tensor<64xi64>) -> tensor<64xi64>
  %all = dtc.micro_batch %labels {index = 0 : i64, count = 1 : i64} : (tensor<64xi64>) -> tensor<64xi64>
  // CHECK-NEXT: %[[H:.*]] = dtc.slice
  %h = dtc.slice %x3 {starts = array<i64: 0, 0>, ends = array<i64: 16, 128>, axes = array<i64: 0, 1>, steps = array<i64: 1, 1>} : (tensor<16x784xf32>) -> tensor<16x128xf32>
  // The send yields a !dtc.token; its wait names the token and the tensor.
  // CHECK-NEXT: %[[T:.*]] = dtc.send_start %[[H]] {peer = 1 : i64, tag = 0 : i64} : tensor<16x128xf32>
  %t = dtc.send_start %h {peer = 1 : i64, tag = 0 : i64} : tensor<16x128xf32>
  // CHECK-NEXT: dtc.schedule_phase {micro_batch = 3 : i64, phase = "backward"}
  dtc.schedule_phase {phase = "backward", micro_batch = 3 : i64}
  // CHECK-NEXT: %[[G:.*]] = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<16x128xf32>
  %g = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<16x128xf32>
  // CHECK-NEXT: dtc.send_wait %[[T]], %[[H]] : tensor<16x128xf32>
  dtc.send_wait %t, %h : tensor<16x128xf32>
  // CHECK-NEXT: return %[[G]]
  return %g : tensor<16x128xf32>
}

// Two sends of one tensor in flight at once, to two stages, each waited for
// once (in any order).
// CHECK-LABEL: func @two_sends
// CHECK: %[[A:.*]] = dtc.send_start %arg0 {peer = 1 : i64, tag = 0 : i64}
// CHECK-NEXT: %[[B:.*]] = dtc.send_start %arg0 {peer = 2 : i64, tag = 1 : i64}
// CHECK-NEXT: dtc.send_wait %[[B]], %arg0
// CHECK-NEXT: dtc.send_wait %[[A]], %arg0
func.func @two_sends(%x: tensor<8x4xf32>) {
  %a = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<8x4xf32>
  %b = dtc.send_start %x {peer = 2 : i64, tag = 1 : i64} : tensor<8x4xf32>
  dtc.send_wait %b, %x : tensor<8x4xf32>
  dtc.send_wait %a, %x : tensor<8x4xf32>
  return
}
