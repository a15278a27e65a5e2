// The collective and pipeline emitters from IR: the same two-layer MLP
// through the library's pipeline as data parallel (one gradient bucket,
// averaged while nothing else runs) and as a 2-stage 1F1B pipeline of 2
// micro-batches with momentum (stage steps, micro-batch slices,
// sends/receives, schedule phases, and a parameter table whose optimizer
// state sits in its weight's stage and names its weight's row). Each stage
// step addresses its own stage's state buffer: stage 1's params sit at
// their table offset minus the stage's base (384), and the program lists
// each stage buffer's size and base.
// RUN: dtc-opt %s --dtc-training-pipeline="strategy=ddp" | dtc-translate --mlir-to-cpp | FileCheck %s --check-prefix=DDP
// RUN: dtc-opt %s --dtc-training-pipeline="strategy=pipeline stages=2 micro-batches=2 momentum=0.9" | dtc-translate --mlir-to-cpp | FileCheck %s --check-prefix=PIPE
// And as tensor parallel on 2 ranks (--tp=2): the row layer's partial sums
// summed over the group in place, each split weight's row naming its split
// dimension (fc2.bias, added after the sum, is whole), the group size.
// RUN: dtc-opt %s --dtc-training-pipeline="tp=2" | dtc-translate --mlir-to-cpp | FileCheck %s --check-prefix=TP
// TP-LABEL: void train_step(
// TP: ctx.tp->allReduce([[P:t[0-9]+]], 12, dtcrt::ReduceOp::Sum)->wait();  // the tensor-parallel group's partial sums
// TP: {{[{][{]}}"fc1.weight", dtcrt::DType::F32, 2, {2, 6}}, dtcrt::ParamKind::Weight, 0, -1, -1, -1, 0, 1, 1},
// TP-NEXT: {{[{][{]}}"fc1.bias", dtcrt::DType::F32, 1, {2}}, dtcrt::ParamKind::Weight, 64, -1, -1, -1, 0, 1, 1},
// TP-NEXT: {{[{][{]}}"fc2.weight", dtcrt::DType::F32, 2, {3, 2}}, dtcrt::ParamKind::Weight, 128, -1, -1, -1, 1, 1, 1},
// TP-NEXT: {{[{][{]}}"fc2.bias", dtcrt::DType::F32, 1, {3}}, dtcrt::ParamKind::Weight, 192, -1, -1, -1, -1, 1, 1},
// TP: .strategy = "tp",
// TP-NEXT: .collectives = "tp_all_reduce:12,tp_all_reduce:12,tp_all_reduce:12",
// TP: .tensorParallel = 2,
// DDP-LABEL: void train_step(
// DDP: std::unique_ptr<dtcrt::Work> [[B:bucket0]] = ctx.comm->allReduce([[G:t[0-9]+]], {{[0-9]+}}, dtcrt::ReduceOp::Mean);  // 4 gradients
// DDP: [[B]]->wait();
// DDP: cpu::sgd_update(
// DDP: .strategy = "ddp",
// DDP-NEXT: .collectives = "all_reduce:43",

// PIPE-LABEL: void stage0_step(
// PIPE: if (ctx.trace) ctx.trace->begin("forward", 0);
// PIPE: std::memcpy([[MB:t[0-9]+]], in0 + 0, 96);
// PIPE: std::unique_ptr<dtcrt::Work> sent0 = ctx.pipe->send({{t[0-9]+}}, 64, /*stage=*/1, /*tag=*/0);
// PIPE: if (ctx.trace) ctx.trace->begin("forward", 1);
// PIPE: std::memcpy({{t[0-9]+}}, in0 + 24, 96);
// PIPE: sent0->wait();
// PIPE: ctx.pipe->recv({{t[0-9]+}}, 64, /*stage=*/1, /*tag=*/1)->wait();
// PIPE-LABEL: void stage1_step(
// PIPE: float* const p_fc2_weight = reinterpret_cast<float*>(state + 0);  // fc2.weight 3x4
// PIPE: ctx.pipe->recv({{t[0-9]+}}, 64, /*stage=*/0, /*tag=*/0)->wait();
// PIPE: float* const p_fc2_weight_momentum_buffer = reinterpret_cast<float*>(state + 64);
// PIPE: const dtcrt::ParamSpec kParams[] = {
// PIPE-NEXT: {{[{][{]}}"fc1.weight", {{.*}}, dtcrt::ParamKind::Weight, 0, -1, 0, -1, -1, 1, 1},
// PIPE-NEXT: {{[{][{]}}"fc1.weight.momentum_buffer", {{.*}}, dtcrt::ParamKind::OptimizerState, 128, 0, 0, -1, -1, 1, 1},
// PIPE-NEXT: {{[{][{]}}"fc1.bias", {{.*}}, dtcrt::ParamKind::Weight, 256, -1, 0, -1, -1, 1, 1},
// PIPE-NEXT: {{[{][{]}}"fc1.bias.momentum_buffer", {{.*}}, dtcrt::ParamKind::OptimizerState, 320, 2, 0, -1, -1, 1, 1},
// PIPE-NEXT: {{[{][{]}}"fc2.weight", {{.*}}, dtcrt::ParamKind::Weight, 384, -1, 1, -1, -1, 1, 1},
// PIPE-NEXT: {{[{][{]}}"fc2.weight.momentum_buffer", {{.*}}, dtcrt::ParamKind::OptimizerState, 448, 4, 1, -1, -1, 1, 1},
// PIPE: const dtcrt::StepFunction kStageSteps[] = {stage0_step, stage1_step};
// PIPE: const size_t kStageStateBytes[] = {384, 256};
// PIPE-NEXT: const size_t kStageStateBase[] = {0, 384};
// PIPE: .pipelineStages = 2,
// PIPE-NEXT: .dataParallel = 1,
// PIPE-NEXT: .microBatches = 2,
// PIPE: .schedule = "1f1b",
// PIPE: .stageStateBytes = kStageStateBytes,
// PIPE-NEXT: .stageStateBase = kStageStateBase,
dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc1.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
dtc.param weight @fc2.bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @forward(%x: tensor<4x6xf32> {dtc.name = "input"}) -> (tensor<4x3xf32> {dtc.name = "logits"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %b1 = dtc.param_ref @fc1.bias : tensor<4xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %b2 = dtc.param_ref @fc2.bias : tensor<3xf32>
  %0 = dtc.gemm %x, %w1, %b1 {transB = true} : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %1 = dtc.relu %0 : tensor<4x4xf32>
  %2 = dtc.gemm %1, %w2, %b2 {transB = true} : (tensor<4x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %2 : tensor<4x3xf32>
}
