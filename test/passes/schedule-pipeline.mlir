// The dtc-schedule-pipeline pass: a partitioned, differentiated @train_step
// becomes one @stage<S>_step per stage, running the stage's part of every
// micro-batch's forward and backward pass in the schedule's order, with
// sends, receives and phase markers. The inputs carry the `dtc.stage`s
// dtc-partition-stages gives (dtc-differentiate runs in the RUN lines and
// copies them to the backward ops). The ORDER runs keep only the stage
// functions and their phase markers, and check that dtc-verify-pipeline
// accepts every schedule built here (no deadlock, every send received).
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline="micro-batches=4 schedule=gpipe" -verify-diagnostics | FileCheck %s --check-prefix=GPIPE
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline="micro-batches=4 schedule=1f1b" -verify-diagnostics | FileCheck %s --check-prefix=OFOB
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline="micro-batches=1" -dtc-verify-pipeline -verify-diagnostics | FileCheck %s --check-prefix=SINGLE
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline="micro-batches=4 schedule=gpipe" -dtc-verify-pipeline -verify-diagnostics \
// RUN:   | grep -E "^// -{5}$|func.func @stage|schedule_phase" | FileCheck %s --check-prefix=ORDER-GPIPE
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline="micro-batches=4 schedule=1f1b" -dtc-verify-pipeline -verify-diagnostics \
// RUN:   | grep -E "^// -{5}$|func.func @stage|schedule_phase" | FileCheck %s --check-prefix=ORDER-OFOB
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2" -verify-diagnostics | FileCheck %s --check-prefix=EVAL
// RUN: not dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline=schedule=zigzag 2>&1 | FileCheck %s --check-prefix=BAD-SCHEDULE
// RUN: not dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline=micro-batches=0 2>&1 | FileCheck %s --check-prefix=BAD-COUNT
//
// Prefixes: GPIPE (all forwards, then all backwards), OFOB (1F1B: one
// forward, one backward), SINGLE (a single micro-batch: --strategy=model).

// BAD-SCHEDULE: error: --schedule: unknown schedule 'zigzag' (expected gpipe or 1f1b)
// BAD-COUNT: error: --micro-batches must be at least 1, got {{.*}}

// A two-layer MLP cut after the relu: stage 0 = fc1, relu; stage 1 = fc2,
// the loss. 4 micro-batches of 2 rows.
// Each param is tagged with the stage that owns it, the module with the
// pipeline's shape; @train_step is gone.
// GPIPE: module attributes {dtc.pipeline = {micro_batches = 4 : i64, schedule = "gpipe", stages = 2 : i64}, dtc.strategy = "pipeline"}
// GPIPE-NEXT: dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<1.000000e-01> : tensor<4x6xf32> {dtc.stage = 0 : i64}
// GPIPE-NEXT: dtc.param weight @fc1.bias : tensor<4xf32> = dense<0.000000e+00> : tensor<4xf32> {dtc.stage = 0 : i64}
// GPIPE-NEXT: dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<2.000000e-01> : tensor<3x4xf32> {dtc.stage = 1 : i64}
// GPIPE-NEXT: dtc.param weight @fc2.bias : tensor<3xf32> = dense<0.000000e+00> : tensor<3xf32> {dtc.stage = 1 : i64}
// GPIPE-NOT: @train_step
// Nothing else carries a dtc.stage: the ops cloned into the stage
// functions lose theirs (the exact op lines below would not match with one).
// GPIPE-NOT: dtc.stage
// Stage 0 (fc1, relu): the whole batch comes in (4 micro-batches of 2 rows:
// 8 rows); params and constants are read once, at the top.
// GPIPE-LABEL: func.func @stage0_step(%arg0: tensor<8x6xf32> {dtc.name = "input"}, %arg1: tensor<8xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"})
// GPIPE-DAG: %[[W1:.*]] = dtc.param_ref @fc1.weight
// GPIPE-DAG: %[[B1:.*]] = dtc.param_ref @fc1.bias
// GPipe: the forwards of micro-batches 0 to 3, each from its own rows,
// its activation sent to stage 1 right after the op that computes it.
// GPIPE: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// GPIPE-NEXT: %[[X0:.*]] = dtc.micro_batch %arg0 {count = 4 : i64, index = 0 : i64} : (tensor<8x6xf32>) -> tensor<2x6xf32>
// GPIPE-NEXT: %[[PRE0:.*]] = dtc.gemm %[[X0]], %[[W1]], %[[B1]] {transB = true}
// GPIPE-NEXT: %[[H0:.*]] = dtc.relu %[[PRE0]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[S0:.*]] = dtc.send_start %[[H0]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "forward"}
// GPIPE-NEXT: %[[X1:.*]] = dtc.micro_batch %arg0 {count = 4 : i64, index = 1 : i64} : (tensor<8x6xf32>) -> tensor<2x6xf32>
// GPIPE-NEXT: %[[PRE1:.*]] = dtc.gemm %[[X1]], %[[W1]], %[[B1]] {transB = true}
// GPIPE-NEXT: %[[H1:.*]] = dtc.relu %[[PRE1]] : tensor<2x4xf32>
// One send per tag in flight: micro-batch 0's is waited for before
// micro-batch 1's starts.
// GPIPE-NEXT: dtc.send_wait %[[S0]], %[[H0]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[S1:.*]] = dtc.send_start %[[H1]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 2 : i64, phase = "forward"}
// GPIPE-NEXT: %[[X2:.*]] = dtc.micro_batch %arg0 {count = 4 : i64, index = 2 : i64} : (tensor<8x6xf32>) -> tensor<2x6xf32>
// GPIPE-NEXT: %[[PRE2:.*]] = dtc.gemm %[[X2]], %[[W1]], %[[B1]] {transB = true}
// GPIPE-NEXT: %[[H2:.*]] = dtc.relu %[[PRE2]] : tensor<2x4xf32>
// GPIPE-NEXT: dtc.send_wait %[[S1]], %[[H1]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[S2:.*]] = dtc.send_start %[[H2]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 3 : i64, phase = "forward"}
// GPIPE-NEXT: %[[X3:.*]] = dtc.micro_batch %arg0 {count = 4 : i64, index = 3 : i64} : (tensor<8x6xf32>) -> tensor<2x6xf32>
// GPIPE-NEXT: %[[PRE3:.*]] = dtc.gemm %[[X3]], %[[W1]], %[[B1]] {transB = true}
// GPIPE-NEXT: %[[H3:.*]] = dtc.relu %[[PRE3]] : tensor<2x4xf32>
// GPIPE-NEXT: dtc.send_wait %[[S2]], %[[H2]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[S3:.*]] = dtc.send_start %[[H3]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// Then the backwards, in the same order; each receives its gradient from
// stage 1 right before its first use.
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// GPIPE-NEXT: %[[D0:.*]] = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[DPRE0:.*]] = dtc.relu_grad %[[PRE0]], %[[D0]]
// GPIPE-NEXT: %[[DW0:.*]] = dtc.gemm %[[DPRE0]], %[[X0]] {transA = true}
// GPIPE-NEXT: %[[DB0:.*]] = dtc.reduce_to_shape %[[DPRE0]]
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// GPIPE-NEXT: %[[D1:.*]] = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[DPRE1:.*]] = dtc.relu_grad %[[PRE1]], %[[D1]]
// GPIPE-NEXT: %[[DW1:.*]] = dtc.gemm %[[DPRE1]], %[[X1]] {transA = true}
// GPIPE-NEXT: %[[DB1:.*]] = dtc.reduce_to_shape %[[DPRE1]]
// The weight gradients are summed over the micro-batches as they come ...
// GPIPE-NEXT: %[[SW1:.*]] = dtc.add %[[DW0]], %[[DW1]]
// GPIPE-NEXT: %[[SB1:.*]] = dtc.add %[[DB0]], %[[DB1]]
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 2 : i64, phase = "backward"}
// GPIPE-NEXT: %[[D2:.*]] = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[DPRE2:.*]] = dtc.relu_grad %[[PRE2]], %[[D2]]
// GPIPE-NEXT: %[[DW2:.*]] = dtc.gemm %[[DPRE2]], %[[X2]] {transA = true}
// GPIPE-NEXT: %[[DB2:.*]] = dtc.reduce_to_shape %[[DPRE2]]
// GPIPE-NEXT: %[[SW2:.*]] = dtc.add %[[SW1]], %[[DW2]]
// GPIPE-NEXT: %[[SB2:.*]] = dtc.add %[[SB1]], %[[DB2]]
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 3 : i64, phase = "backward"}
// GPIPE-NEXT: %[[D3:.*]] = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[DPRE3:.*]] = dtc.relu_grad %[[PRE3]], %[[D3]]
// GPIPE-NEXT: %[[DW3:.*]] = dtc.gemm %[[DPRE3]], %[[X3]] {transA = true}
// GPIPE-NEXT: %[[DB3:.*]] = dtc.reduce_to_shape %[[DPRE3]]
// GPIPE-NEXT: %[[SW3:.*]] = dtc.add %[[SW2]], %[[DW3]]
// ... and scaled by 1/4 (the gradient of the whole batch's mean loss)
// before dtc.gradient.
// GPIPE-NEXT: %[[QW:.*]] = dtc.constant dense<2.500000e-01> : tensor<f32>
// GPIPE-NEXT: %[[GW:.*]] = dtc.mul %[[SW3]], %[[QW]] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// GPIPE-NEXT: dtc.gradient @fc1.weight, %[[GW]] : tensor<4x6xf32>
// GPIPE-NEXT: %[[SB3:.*]] = dtc.add %[[SB2]], %[[DB3]]
// GPIPE-NEXT: %[[QB:.*]] = dtc.constant dense<2.500000e-01> : tensor<f32>
// GPIPE-NEXT: %[[GB:.*]] = dtc.mul %[[SB3]], %[[QB]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// GPIPE-NEXT: dtc.gradient @fc1.bias, %[[GB]] : tensor<4xf32>
// The last send is waited for at the end; stage 0 returns 0 as its loss.
// GPIPE-NEXT: dtc.send_wait %[[S3]], %[[H3]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[ZERO:.*]] = dtc.constant dense<0.000000e+00> : tensor<f32>
// GPIPE-NEXT: return %[[ZERO]] : tensor<f32>
// Stage 1 (fc2, the loss): receives each activation right before its first
// use (same peer, tag and type as the send), slices the labels, and sums
// the micro-batches' losses.
// GPIPE-LABEL: func.func @stage1_step(%arg0: tensor<8x6xf32> {dtc.name = "input"}, %arg1: tensor<8xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"})
// GPIPE-DAG: %[[ONE:.*]] = dtc.constant dense<1.000000e+00> : tensor<f32>
// GPIPE-DAG: %[[W2:.*]] = dtc.param_ref @fc2.weight
// GPIPE-DAG: %[[B2:.*]] = dtc.param_ref @fc2.bias
// GPIPE: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// GPIPE-NEXT: %[[H0:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[Y0:.*]] = dtc.gemm %[[H0]], %[[W2]], %[[B2]] {transB = true}
// GPIPE-NEXT: %[[L0:.*]] = dtc.micro_batch %arg1 {count = 4 : i64, index = 0 : i64} : (tensor<8xi64>) -> tensor<2xi64>
// GPIPE-NEXT: %[[LOSS0:.*]] = dtc.softmax_cross_entropy %[[Y0]], %[[L0]]
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "forward"}
// GPIPE-NEXT: %[[H1:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[Y1:.*]] = dtc.gemm %[[H1]], %[[W2]], %[[B2]] {transB = true}
// GPIPE-NEXT: %[[L1:.*]] = dtc.micro_batch %arg1 {count = 4 : i64, index = 1 : i64} : (tensor<8xi64>) -> tensor<2xi64>
// GPIPE-NEXT: %[[LOSS1:.*]] = dtc.softmax_cross_entropy %[[Y1]], %[[L1]]
// GPIPE-NEXT: %[[LS1:.*]] = dtc.add %[[LOSS0]], %[[LOSS1]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 2 : i64, phase = "forward"}
// GPIPE-NEXT: %[[H2:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[Y2:.*]] = dtc.gemm %[[H2]], %[[W2]], %[[B2]] {transB = true}
// GPIPE-NEXT: %[[L2:.*]] = dtc.micro_batch %arg1 {count = 4 : i64, index = 2 : i64} : (tensor<8xi64>) -> tensor<2xi64>
// GPIPE-NEXT: %[[LOSS2:.*]] = dtc.softmax_cross_entropy %[[Y2]], %[[L2]]
// GPIPE-NEXT: %[[LS2:.*]] = dtc.add %[[LS1]], %[[LOSS2]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 3 : i64, phase = "forward"}
// GPIPE-NEXT: %[[H3:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: %[[Y3:.*]] = dtc.gemm %[[H3]], %[[W2]], %[[B2]] {transB = true}
// GPIPE-NEXT: %[[L3:.*]] = dtc.micro_batch %arg1 {count = 4 : i64, index = 3 : i64} : (tensor<8xi64>) -> tensor<2xi64>
// GPIPE-NEXT: %[[LOSS3:.*]] = dtc.softmax_cross_entropy %[[Y3]], %[[L3]]
// GPIPE-NEXT: %[[LS3:.*]] = dtc.add %[[LS2]], %[[LOSS3]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// Its backwards send the activations' gradients to stage 0 (tag 1) right
// after computing them.
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// GPIPE-NEXT: %[[DY0:.*]] = dtc.softmax_cross_entropy_grad %[[Y0]], %[[L0]], %[[ONE]]
// GPIPE-NEXT: %[[DH0:.*]] = dtc.gemm %[[DY0]], %[[W2]] :
// GPIPE-NEXT: %[[T0:.*]] = dtc.send_start %[[DH0]] {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: dtc.gemm %[[DY0]], %[[H0]] {transA = true}
// GPIPE-NEXT: dtc.reduce_to_shape %[[DY0]]
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// GPIPE-NEXT: %[[DY1:.*]] = dtc.softmax_cross_entropy_grad %[[Y1]], %[[L1]], %[[ONE]]
// GPIPE-NEXT: %[[DH1:.*]] = dtc.gemm %[[DY1]], %[[W2]] :
// GPIPE-NEXT: dtc.send_wait %[[T0]], %[[DH0]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[T1:.*]] = dtc.send_start %[[DH1]] {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: dtc.gemm %[[DY1]], %[[H1]] {transA = true}
// GPIPE-NEXT: dtc.reduce_to_shape %[[DY1]]
// GPIPE-NEXT: dtc.add
// GPIPE-NEXT: dtc.add
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 2 : i64, phase = "backward"}
// GPIPE-NEXT: %[[DY2:.*]] = dtc.softmax_cross_entropy_grad %[[Y2]], %[[L2]], %[[ONE]]
// GPIPE-NEXT: %[[DH2:.*]] = dtc.gemm %[[DY2]], %[[W2]] :
// GPIPE-NEXT: dtc.send_wait %[[T1]], %[[DH1]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[T2:.*]] = dtc.send_start %[[DH2]] {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: dtc.gemm %[[DY2]], %[[H2]] {transA = true}
// GPIPE-NEXT: dtc.reduce_to_shape %[[DY2]]
// GPIPE-NEXT: dtc.add
// GPIPE-NEXT: dtc.add
// GPIPE-NEXT: dtc.schedule_phase {micro_batch = 3 : i64, phase = "backward"}
// GPIPE-NEXT: %[[DY3:.*]] = dtc.softmax_cross_entropy_grad %[[Y3]], %[[L3]], %[[ONE]]
// GPIPE-NEXT: %[[DH3:.*]] = dtc.gemm %[[DY3]], %[[W2]] :
// GPIPE-NEXT: dtc.send_wait %[[T2]], %[[DH2]] : tensor<2x4xf32>
// GPIPE-NEXT: %[[T3:.*]] = dtc.send_start %[[DH3]] {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
// GPIPE-NEXT: dtc.gemm %[[DY3]], %[[H3]] {transA = true}
// GPIPE-NEXT: dtc.reduce_to_shape %[[DY3]]
// GPIPE-NEXT: dtc.add
// GPIPE-NEXT: dtc.constant dense<2.500000e-01>
// GPIPE-NEXT: dtc.mul
// GPIPE-NEXT: dtc.gradient @fc2.weight, %{{.*}} : tensor<3x4xf32>
// GPIPE-NEXT: dtc.add
// GPIPE-NEXT: dtc.constant dense<2.500000e-01>
// GPIPE-NEXT: dtc.mul
// GPIPE-NEXT: dtc.gradient @fc2.bias, %{{.*}} : tensor<3xf32>
// GPIPE-NEXT: dtc.send_wait %[[T3]], %[[DH3]] : tensor<2x4xf32>
// The last stage returns the mean loss: the sum times 1/4.
// GPIPE-NEXT: %[[QL:.*]] = dtc.constant dense<2.500000e-01> : tensor<f32>
// GPIPE-NEXT: %[[MEAN:.*]] = dtc.mul %[[LS3]], %[[QL]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// GPIPE-NEXT: return %[[MEAN]] : tensor<f32>

// GPIPE-NOT: @train_step
// GPIPE: {{^// [-]{5}$}}

// 1F1B on 2 stages: stage 0 warms up with one forward, then alternates:
// F0 F1 B0 F2 B1 F3 B2 B3. Sends still wait for the previous micro-batch's;
// each backward receives its gradient first.
// OFOB: module attributes {dtc.pipeline = {micro_batches = 4 : i64, schedule = "1f1b", stages = 2 : i64}, dtc.strategy = "pipeline"}
// OFOB-LABEL: func.func @stage0_step(%arg0: tensor<8x6xf32> {dtc.name = "input"}, %arg1: tensor<8xi64> {dtc.name = "labels"})
// OFOB: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// OFOB: %[[S0:.*]] = dtc.send_start %[[H0:.*]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// OFOB-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "forward"}
// OFOB: dtc.send_wait %[[S0]], %[[H0]] : tensor<2x4xf32>
// OFOB-NEXT: %[[S1:.*]] = dtc.send_start %[[H1:.*]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// OFOB-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// OFOB-NEXT: dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// OFOB: dtc.schedule_phase {micro_batch = 2 : i64, phase = "forward"}
// OFOB: dtc.send_wait %[[S1]], %[[H1]] : tensor<2x4xf32>
// OFOB-NEXT: %[[S2:.*]] = dtc.send_start %[[H2:.*]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// OFOB-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// OFOB-NEXT: dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// OFOB: dtc.schedule_phase {micro_batch = 3 : i64, phase = "forward"}
// OFOB: dtc.send_wait %[[S2]], %[[H2]] : tensor<2x4xf32>
// OFOB-NEXT: %[[S3:.*]] = dtc.send_start %[[H3:.*]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// OFOB-NEXT: dtc.schedule_phase {micro_batch = 2 : i64, phase = "backward"}
// OFOB-NEXT: dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// OFOB: dtc.schedule_phase {micro_batch = 3 : i64, phase = "backward"}
// OFOB-NEXT: dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
// OFOB: dtc.gradient @fc1.weight
// OFOB: dtc.gradient @fc1.bias
// OFOB-NEXT: dtc.send_wait %[[S3]], %[[H3]] : tensor<2x4xf32>
// OFOB-NEXT: %[[ZERO:.*]] = dtc.constant dense<0.000000e+00> : tensor<f32>
// OFOB-NEXT: return %[[ZERO]]
// The last stage has no warm-up: F0 B0 F1 B1 F2 B2 F3 B3.
// OFOB-LABEL: func.func @stage1_step
// OFOB: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// OFOB-NEXT: %[[R0:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// OFOB: %[[LOSS0:.*]] = dtc.softmax_cross_entropy
// OFOB-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// OFOB: %[[T0:.*]] = dtc.send_start %[[D0:.*]] {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
// OFOB: dtc.schedule_phase {micro_batch = 1 : i64, phase = "forward"}
// OFOB-NEXT: dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// OFOB: %[[LOSS1:.*]] = dtc.softmax_cross_entropy
// OFOB-NEXT: %[[LS1:.*]] = dtc.add %[[LOSS0]], %[[LOSS1]]
// OFOB-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// OFOB: dtc.send_wait %[[T0]], %[[D0]] : tensor<2x4xf32>
// OFOB-NEXT: %[[T1:.*]] = dtc.send_start %[[D1:.*]] {peer = 0 : i64, tag = 1 : i64}
// OFOB: dtc.schedule_phase {micro_batch = 2 : i64, phase = "forward"}
// OFOB: dtc.schedule_phase {micro_batch = 2 : i64, phase = "backward"}
// OFOB: dtc.schedule_phase {micro_batch = 3 : i64, phase = "forward"}
// OFOB: %[[LS3:.*]] = dtc.add
// OFOB-NEXT: dtc.schedule_phase {micro_batch = 3 : i64, phase = "backward"}
// OFOB: %[[T3:.*]] = dtc.send_start %[[D3:.*]] {peer = 0 : i64, tag = 1 : i64}
// OFOB: dtc.gradient @fc2.bias
// OFOB-NEXT: dtc.send_wait %[[T3]], %[[D3]] : tensor<2x4xf32>
// OFOB-NEXT: %[[QL:.*]] = dtc.constant dense<2.500000e-01> : tensor<f32>
// OFOB-NEXT: %[[MEAN:.*]] = dtc.mul %[[LS3]], %[[QL]]
// OFOB-NEXT: return %[[MEAN]] : tensor<f32>
// OFOB: {{^// [-]{5}$}}

// One micro-batch (--strategy=model): the stage functions take the
// imported batch, nothing is scaled, stage 1 returns its loss as computed.
// SINGLE: module attributes {dtc.pipeline = {micro_batches = 1 : i64, schedule = "1f1b", stages = 2 : i64}, dtc.predicted_step_seconds = {{.*}} : f64, dtc.strategy = "pipeline"}
// SINGLE-LABEL: func.func @stage0_step(%arg0: tensor<2x6xf32> {dtc.name = "input"}, %arg1: tensor<2xi64> {dtc.name = "labels"})
// SINGLE: dtc.micro_batch %arg0 {count = 1 : i64, index = 0 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32>
// SINGLE-NOT: dtc.mul
// SINGLE: dtc.gradient @fc1.weight, %{{.*}} : tensor<4x6xf32>
// SINGLE-NOT: dtc.mul
// SINGLE-LABEL: func.func @stage1_step
// SINGLE-NOT: dtc.mul
// SINGLE: %[[LOSS:.*]] = dtc.softmax_cross_entropy
// SINGLE-NOT: dtc.mul
// SINGLE: return %[[LOSS]] : tensor<f32>
// SINGLE: {{^// [-]{5}$}}

// ORDER-GPIPE: func.func @stage0_step
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: func.func @stage1_step
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {{^// [-]{5}$}}

// ORDER-OFOB: func.func @stage0_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: func.func @stage1_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {{^// [-]{5}$}}

dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc1.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
dtc.param weight @fc2.bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @train_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %b1 = dtc.param_ref @fc1.bias : tensor<4xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %b2 = dtc.param_ref @fc2.bias : tensor<3xf32>
  %0 = dtc.gemm %x, %w1, %b1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.relu %0 {dtc.stage = 0 : i64} : tensor<2x4xf32>
  %2 = dtc.gemm %1, %w2, %b2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = dtc.softmax_cross_entropy %2, %labels {dtc.stage = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// Four stages of one GEMM each (the loss on the last): GPipe runs all
// forwards then all backwards on every stage; 1F1B's warm-up is
// min(stages - 1 - stage, micro-batches) forwards: 3, 2, 1, 0.
// ORDER-GPIPE: func.func @stage0_step
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: func.func @stage1_step
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: func.func @stage2_step
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: func.func @stage3_step
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-GPIPE-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-GPIPE-NEXT: {{^// [-]{5}$}}
// ORDER-OFOB: func.func @stage0_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: func.func @stage1_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: func.func @stage2_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: func.func @stage3_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {{^// [-]{5}$}}

dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc2.weight : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32>
dtc.param weight @fc3.weight : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32>
dtc.param weight @fc4.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<4x4xf32>
  %w3 = dtc.param_ref @fc3.weight : tensor<4x4xf32>
  %w4 = dtc.param_ref @fc4.weight : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %1 = dtc.gemm %0, %w2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = dtc.gemm %1, %w3 {dtc.stage = 2 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %3 = dtc.gemm %2, %w4 {dtc.stage = 3 : i64, transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %4 = dtc.softmax_cross_entropy %3, %labels {dtc.stage = 3 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// Three stages with a skip connection: fc1's output %0 (stage 0) is read by
// fc2 (stage 1) and by the add (stage 2). It is sent once per reading stage,
// each with its own tag; stage 2 receives both inputs of the add right
// before it. In backward, the two gradients of %0 (from the add on stage 2,
// and from fc2 on stage 1) are summed on the earlier of the two stages, so
// gradients only flow towards earlier stages: stage 1 receives stage 2's,
// adds its own and sends the total to stage 0.
// 1F1B warm-ups on three stages: 2, 1, 0 forwards.
// ORDER-OFOB: func.func @stage0_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: func.func @stage1_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: func.func @stage2_step
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 0 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 1 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 2 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "forward"}
// ORDER-OFOB-NEXT: {micro_batch = 3 : i64, phase = "backward"}
// ORDER-OFOB-NEXT: {{^// [-]{5}$}}
// SINGLE: module attributes {dtc.pipeline = {micro_batches = 1 : i64, schedule = "1f1b", stages = 3 : i64}
// SINGLE: func.func @stage0_step
// SINGLE: %[[Y:.*]] = dtc.gemm
// SINGLE-NEXT: %[[TO1:.*]] = dtc.send_start %[[Y]] {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: %[[TO2:.*]] = dtc.send_start %[[Y]] {peer = 2 : i64, tag = 1 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// SINGLE-NEXT: %[[DY:.*]] = dtc.recv {peer = 1 : i64, tag = 4 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: %[[DW1:.*]] = dtc.gemm %[[DY]], %{{.*}} {transA = true}
// SINGLE-NEXT: dtc.gradient @fc1.weight, %[[DW1]]
// SINGLE-DAG: dtc.send_wait %[[TO1]], %[[Y]]
// SINGLE-DAG: dtc.send_wait %[[TO2]], %[[Y]]
// SINGLE: func.func @stage1_step
// SINGLE: %[[Y:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: %[[Z:.*]] = dtc.gemm %[[Y]], %{{.*}} {transB = true}
// SINGLE-NEXT: %[[TZ:.*]] = dtc.send_start %[[Z]] {peer = 2 : i64, tag = 2 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// SINGLE-NEXT: %[[DSUM:.*]] = dtc.recv {peer = 2 : i64, tag = 3 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: %[[DY1:.*]] = dtc.gemm %[[DSUM]], %{{.*}} :
// SINGLE-NEXT: dtc.gemm %[[DSUM]], %[[Y]] {transA = true}
// SINGLE-NEXT: %[[DY:.*]] = dtc.add %[[DSUM]], %[[DY1]]
// SINGLE-NEXT: %[[TDY:.*]] = dtc.send_start %[[DY]] {peer = 0 : i64, tag = 4 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: dtc.gradient @fc2.weight
// SINGLE: func.func @stage2_step
// SINGLE: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// SINGLE-NEXT: %[[A:.*]] = dtc.recv {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: %[[B:.*]] = dtc.recv {peer = 1 : i64, tag = 2 : i64} : tensor<2x4xf32>
// SINGLE-NEXT: dtc.add %[[A]], %[[B]]
// SINGLE: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// SINGLE: %[[DSUM:.*]] = dtc.gemm %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// SINGLE-NEXT: dtc.send_start %[[DSUM]] {peer = 1 : i64, tag = 3 : i64} : tensor<2x4xf32>
// SINGLE-NOT: dtc.send_start
// SINGLE: return
// SINGLE: {{^// [-]{5}$}}

dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc2.weight : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32>
dtc.param weight @fc3.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<4x4xf32>
  %w3 = dtc.param_ref @fc3.weight : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %1 = dtc.gemm %0, %w2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = dtc.add %0, %1 {dtc.stage = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = dtc.gemm %2, %w3 {dtc.stage = 2 : i64, transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %4 = dtc.softmax_cross_entropy %3, %labels {dtc.stage = 2 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// A @train_step that dtc-partition-stages has not seen.
dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
// expected-error@+1 {{dtc-schedule-pipeline needs a partitioned @train_step (run dtc-partition-stages before dtc-differentiate)}}
func.func @train_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
  %w = dtc.param_ref @w : tensor<4xf32>
  %0 = dtc.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.mse_loss %0, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A forward op without a stage (the loss has one).
dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
func.func @train_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
  %w = dtc.param_ref @w : tensor<4xf32>
  // expected-error@+1 {{'dtc.mul' op has no dtc.stage: every forward op needs one}}
  %0 = dtc.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.mse_loss %0, %t {dtc.stage = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Every op on one stage is no pipeline.
dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
// expected-error@+1 {{a pipeline needs at least 2 stages, the partition has 1}}
func.func @train_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
  %w = dtc.param_ref @w : tensor<4xf32>
  %0 = dtc.mul %x, %w {dtc.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.mse_loss %0, %t {dtc.stage = 0 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// @eval_step is cut into @stage<S>_eval: each op on the stage that holds
// its weight (or after its inputs' stages), one batch, the activation sent
// on; the last stage returns the loss and the correct count, the others
// zeros; @eval_step is removed.
// EVAL-LABEL: func.func @stage0_eval(%arg0: tensor<2x6xf32> {dtc.name = "input"}, %arg1: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}, tensor<i64> {dtc.name = "correct"})
// EVAL-NOT: dtc.micro_batch
// EVAL: %[[E0:.*]] = dtc.gemm %arg0
// EVAL-NEXT: %[[E1:.*]] = dtc.relu %[[E0]]
// EVAL-NEXT: %[[T:.*]] = dtc.send_start %[[E1]] {peer = 1 : i64, tag = 0 : i64}
// EVAL: dtc.send_wait %[[T]], %[[E1]]
// EVAL: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<i64>
// EVAL-LABEL: func.func @stage1_eval
// EVAL: %[[R:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
// EVAL-NEXT: %[[L:.*]] = dtc.gemm %[[R]]
// EVAL-NEXT: %[[LOSS:.*]] = dtc.softmax_cross_entropy %[[L]], %arg1
// EVAL-NEXT: %[[C:.*]] = dtc.count_correct %[[L]], %arg1
// EVAL-NEXT: return %[[LOSS]], %[[C]] : tensor<f32>, tensor<i64>
// EVAL-NOT: @eval_step
dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %1 = dtc.relu %0 {dtc.stage = 0 : i64} : tensor<2x4xf32>
  %2 = dtc.gemm %1, %w2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %3 = dtc.softmax_cross_entropy %2, %labels {dtc.stage = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}
func.func @eval_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}, tensor<i64> {dtc.name = "correct"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %1 = dtc.relu %0 : tensor<2x4xf32>
  %2 = dtc.gemm %1, %w2 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %3 = dtc.softmax_cross_entropy %2, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %4 = dtc.count_correct %2, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<i64>
  return %3, %4 : tensor<f32>, tensor<i64>
}

// -----

// An evaluation that reads stage 0's weight after a stage-1 value: stage 0
// sends that weight to stage 1 at the start (as it sends a tied weight),
// where the op runs.
// EVAL-LABEL: func.func @stage0_eval
// EVAL-NEXT: %[[W:.*]] = dtc.param_ref @fc1.weight
// EVAL-NEXT: %[[T:.*]] = dtc.send_start %[[W]] {peer = 1 : i64, tag = 0 : i64}
// EVAL-NEXT: dtc.send_wait %[[T]], %[[W]]
// EVAL-LABEL: func.func @stage1_eval
// EVAL: %[[R:.*]] = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<4x4xf32>
// EVAL: dtc.gemm %{{.*}}, %[[R]] {transB = true}
// EVAL-NOT: @eval_step
dtc.param weight @fc1.weight : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32>
dtc.param weight @fc2.weight : tensor<4x4xf32> = dense<0.2> : tensor<4x4xf32>
func.func @train_step(%x: tensor<2x4xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x4xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<4x4xf32>
  %0 = dtc.gemm %x, %w1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = dtc.gemm %0, %w2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = dtc.softmax_cross_entropy %1, %labels {dtc.stage = 1 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
func.func @eval_step(%x: tensor<2x4xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}, tensor<i64> {dtc.name = "correct"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x4xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<4x4xf32>
  %0 = dtc.gemm %x, %w2 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = dtc.gemm %0, %w1 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = dtc.softmax_cross_entropy %1, %labels : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %3 = dtc.count_correct %1, %labels : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<i64>
  return %2, %3 : tensor<f32>, tensor<i64>
}
