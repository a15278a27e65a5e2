//===- DtcPipelineOps.td - pipeline stages: point-to-point and schedule --===//
//
// The ops dtc-schedule-pipeline writes into each stage's step function: the
// rows of one micro-batch, activations and gradients sent to and received
// from other stages, and markers of the schedule (which micro-batch's
// forward or backward pass runs next).
//
//===----------------------------------------------------------------------===//

#ifndef DTC_PIPELINE_OPS_TD
#define DTC_PIPELINE_OPS_TD

include "DtcBase.td"
include "DtcTypes.td"

def Dtc_MicroBatchOp : Dtc_Op<"micro_batch", [Pure, InferTypeOpAdaptor]> {
  let summary = "rows [index * n, (index + 1) * n) of a batch of count * n rows";
  let description = [{
    A pipeline step reads the whole batch; each micro-batch is one slice of
    it along the first dimension.

    ```mlir
    %x0 = dtc.micro_batch %x {index = 0 : i64, count = 4 : i64}
        : (tensor<64x784xf32>) -> tensor<16x784xf32>
    ```
  }];
  let arguments = (ins Dtc_Tensor:$input, I64Attr:$index, I64Attr:$count);
  let results = (outs Dtc_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $output)";
  let hasVerifier = 1;
}

def Dtc_SendStartOp : Dtc_Op<"send_start", [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "starts sending a tensor to another pipeline stage";
  let description = [{
    Sends are asynchronous: the tensor must not be written until the
    matching `dtc.send_wait`, which keeps it alive. The receiving stage
    posts a `dtc.recv` with the same tag; sends and receives between two
    stages with one tag are matched in program order.

    ```mlir
    %t = dtc.send_start %h {peer = 1 : i64, tag = 0 : i64} : tensor<16x128xf32>
    ```
  }];
  let arguments = (ins Dtc_Tensor:$value, I64Attr:$peer, I64Attr:$tag);
  let results = (outs Dtc_TokenType:$token);
  let assemblyFormat = "$value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Dtc_SendWaitOp : Dtc_Op<"send_wait", [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "waits until a send has been received; the tensor may be reused";
  let arguments = (ins Dtc_TokenType:$token, Dtc_Tensor:$value);
  let assemblyFormat = "$token `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    SendStartOp getStart() { return getToken().getDefiningOp<SendStartOp>(); }
  }];
}

def Dtc_RecvOp : Dtc_Op<"recv", [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "receives a tensor from another pipeline stage (blocking)";
  let description = [{
    ```mlir
    %h = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<16x128xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs Dtc_Tensor:$value);
  let assemblyFormat = "attr-dict `:` type($value)";
}

def Dtc_SchedulePhaseOp : Dtc_Op<"schedule_phase", [Dtc_NoKernel, MemoryEffects<[MemWrite]>]> {
  let summary = "marks the start of one micro-batch's forward or backward pass";
  let description = [{
    The ops that follow, up to the next marker, are the `phase`
    ("forward" or "backward") of micro-batch `micro_batch` on this stage.
    The markers make the schedule (GPipe, 1F1B) explicit in the IR; the
    program records them for `--trace`.

    ```mlir
    dtc.schedule_phase {phase = "forward", micro_batch = 0 : i64}
    ```
  }];
  let arguments = (ins StrAttr:$phase, I64Attr:$micro_batch);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

#endif // DTC_PIPELINE_OPS_TD
