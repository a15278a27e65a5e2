// The sharded-update and all-gather emitters (--strategy=fsdp, ZeRO-1) from
// IR: each update runs on the part of its weight this rank's shard holds
// (pointers offset by the shard's start, Adam's moments from the shard
// slots), the step ends with the in-place all-gather of the shards, and the
// program records the flat region and the slots for the runtime.
// RUN: dtc-opt %s --dtc-training-pipeline="strategy=fsdp optimizer=adam lr=0.001" | dtc-translate --mlir-to-cpp | FileCheck %s
// RUN: dtc-opt %s --dtc-training-pipeline="strategy=fsdp optimizer=adam lr=0.001 clip-grad-norm=1.0" | dtc-translate --mlir-to-cpp | FileCheck %s --check-prefix=CLIP
// RUN: dtc-opt %s --dtc-training-pipeline="strategy=fsdp optimizer=adam lr=0.001 shard=parameters" | dtc-translate --mlir-to-cpp | FileCheck %s --check-prefix=ZERO3
// ZeRO-3: forward reads the weights from their gathered copy in the arena
// (one block, the group's 35 floats of the flat region from every rank's
// shard), the updates write the rank's shard, and nothing is gathered at
// the step's end.
// ZERO3-LABEL: void train_step(
// ZERO3: {{\[\[maybe_unused\]\]}} float* const [[W:t[0-9]+]] = reinterpret_cast<float*>(arena + 0);  // 3x6
// ZERO3-NEXT: {{\[\[maybe_unused\]\]}} float* const [[B:t[0-9]+]] = reinterpret_cast<float*>(arena + 128);  // 3
// ZERO3: std::unique_ptr<dtcrt::Work> gather0 = ctx.comm->allGatherBlocks(ctx.shard.mineOf(/*flat_offset=*/0, 35), [[W]], ctx.shard.counts(0, 35));
// ZERO3: gather0->wait();
// ZERO3: cpu::gemm(/*transA=*/false, /*transB=*/true, /*M=*/2, /*N=*/3, /*K=*/6, /*alpha=*/1.f, in0, /*lda=*/6, [[W]], /*ldb=*/6, /*beta=*/0.f, {{t[0-9]+}}, /*ldc=*/3);
// ZERO3-NEXT: cpu::add_bias_rows({{t[0-9]+}}, [[B]], /*M=*/2, /*N=*/3);
// ZERO3: cpu::adam_update(p_w + shard.begin,
// ZERO3: // The 2 updated weights stay sharded (ZeRO-3): the next step gathers them.
// ZERO3-NOT: ctx.comm->allGather(
// ZERO3: .shardParameters = true,
// CHECK-LABEL: void train_step(
// The bucket (w's 18 gradients padded to 32, then b's 3) mirrors the flat
// region from 0: reduced only where this rank's shard covers it.
// CHECK: std::unique_ptr<dtcrt::Work> bucket0 = ctx.comm->reduceScatterBlocks([[DW:t[0-9]+]], ctx.shard.counts(/*flat_offset=*/0, 35), dtcrt::ReduceOp::Mean);
// Clipping by global norm reads the whole averaged gradient: all-reduced.
// CLIP: ctx.comm->allReduce(
// CLIP-NOT: reduceScatterBlocks
// CHECK: {  // w: only this rank's shard of it (ZeRO-1)
// CHECK-NEXT:   const dtcrt::ShardRange shard = ctx.shard.of(/*flat_offset=*/0, /*elements=*/18);
// CHECK-NEXT:   cpu::adam_update(p_w + shard.begin, [[DW]] + shard.begin, ctx.shard.slot(0) + shard.slot, ctx.shard.slot(1) + shard.slot, shard.count, ctx.lr,
// CHECK-NEXT: }
// CHECK: {  // b: only this rank's shard of it (ZeRO-1)
// CHECK-NEXT:   const dtcrt::ShardRange shard = ctx.shard.of(/*flat_offset=*/32, /*elements=*/3);
// CHECK: ctx.comm->allGather(ctx.shard.mine(), ctx.shard.region, ctx.shard.bytes())->wait();
// CHECK-LABEL: const dtcrt::ParamSpec kParams[] = {
// The optimizer state has a slot, not an offset.
// CHECK: ParamKind::OptimizerState, 0, {{[0-9]+}}, -1, 0, -1, 1, 1},
// CHECK: ParamKind::OptimizerState, 0, {{[0-9]+}}, -1, 1, -1, 1, 1},
// CHECK: .strategy = "fsdp",
// CHECK: .flatStateOffset = 0,
// CHECK-NEXT: .flatStateElements = 48,
// CHECK-NEXT: .shardSlots = 2,
// CHECK-NEXT: .shardParameters = false,
dtc.param weight @w : tensor<3x6xf32> = dense<0.1> : tensor<3x6xf32>
dtc.param weight @b : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @forward(%x: tensor<2x6xf32> {dtc.name = "input"}) -> (tensor<2x3xf32> {dtc.name = "logits"}) {
  %w = dtc.param_ref @w : tensor<3x6xf32>
  %b = dtc.param_ref @b : tensor<3xf32>
  %0 = dtc.gemm %x, %w, %b {transB = true} : (tensor<2x6xf32>, tensor<3x6xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
