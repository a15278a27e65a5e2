//===- PlanAttributes.h - names of the plan the passes leave in the IR ---===//
//
// The back end reads its plan from the IR: where every tensor lives in the
// arena, where every param lives in the state buffer, which stage owns it.
// The passes that decide these (dtc-plan-memory, dtc-layout-state,
// dtc-schedule-pipeline) write these attributes; codegen and `dtc --report`
// only read them. Each name is declared here once.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_DIALECT_PLANATTRIBUTES_H
#define DTC_DIALECT_PLANATTRIBUTES_H

namespace dtc::attr {

/// On an op writing arena tensors: one byte offset per result
/// (DenseI64ArrayAttr).
inline constexpr char kArenaOffsets[] = "dtc.arena_offsets";
/// On a function: the arena bytes its plan needs (the peak), and what the
/// same tensors would take without reuse (I64).
inline constexpr char kArenaBytes[] = "dtc.arena_bytes";
inline constexpr char kArenaUnsharedBytes[] = "dtc.arena_unshared_bytes";

/// On a dtc.param: its byte offset in the state buffer (I64).
inline constexpr char kStateOffset[] = "dtc.state_offset";
/// On the module: the state buffer's size in bytes (I64).
inline constexpr char kStateBytes[] = "dtc.state_bytes";
/// On an optimizer_state dtc.param: the weight it belongs to
/// (FlatSymbolRefAttr), set by the pass that creates it.
inline constexpr char kStateOf[] = "dtc.state_of";
/// On ops and params of a pipeline: the stage that runs or owns them (I64).
inline constexpr char kStage[] = "dtc.stage";

} // namespace dtc::attr

#endif // DTC_DIALECT_PLANATTRIBUTES_H
