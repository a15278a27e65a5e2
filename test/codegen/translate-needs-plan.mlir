// IR without the plan (or with one that does not fit) is refused by the back
// end with a line naming what is missing: codegen never plans by itself.
// RUN: not dtc-translate --mlir-to-cpp %s -split-input-file 2>&1 | FileCheck %s

// CHECK: error: @forward has no memory plan (dtc.arena_bytes): run dtc-plan-memory
module attributes {dtc.state_bytes = 0 : i64} {
  func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
    %0 = dtc.relu %x : tensor<2x6xf32>
    return %0 : tensor<2x6xf32>
  }
}

// -----

// CHECK: error: 'dtc.relu' op has no arena offset for each result (dtc.arena_offsets): run dtc-plan-memory
module attributes {dtc.state_bytes = 0 : i64} {
  func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x6xf32>
      attributes {dtc.arena_bytes = 64 : i64, dtc.arena_unshared_bytes = 64 : i64} {
    %0 = dtc.relu %x : tensor<2x6xf32>
    return %0 : tensor<2x6xf32>
  }
}

// -----

// CHECK: error: 'dtc.relu' op arena offset 64 is outside the function's arena of 64 bytes
module attributes {dtc.state_bytes = 0 : i64} {
  func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x6xf32>
      attributes {dtc.arena_bytes = 64 : i64, dtc.arena_unshared_bytes = 64 : i64} {
    %0 = dtc.relu %x {dtc.arena_offsets = array<i64: 64>} : tensor<2x6xf32>
    return %0 : tensor<2x6xf32>
  }
}

// -----

// CHECK: error: the module has no state layout (dtc.state_bytes): run dtc-layout-state
module {
  func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x6xf32>
      attributes {dtc.arena_bytes = 64 : i64, dtc.arena_unshared_bytes = 64 : i64} {
    %0 = dtc.relu %x {dtc.arena_offsets = array<i64: 0>} : tensor<2x6xf32>
    return %0 : tensor<2x6xf32>
  }
}

// -----

// CHECK: error: 'dtc.param' op has no state offset (dtc.state_offset): run dtc-layout-state
module attributes {dtc.state_bytes = 64 : i64} {
  dtc.param weight @w : tensor<3xf32> = dense<0.1> : tensor<3xf32>
  func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x6xf32>
      attributes {dtc.arena_bytes = 64 : i64, dtc.arena_unshared_bytes = 64 : i64} {
    %0 = dtc.relu %x {dtc.arena_offsets = array<i64: 0>} : tensor<2x6xf32>
    return %0 : tensor<2x6xf32>
  }
}

// -----

// A CPU convolution runs the kernel dtc-choose-conv-algorithms chose:
// codegen does not choose one itself.
// CHECK: error: codegen: dtc.conv: no CPU algorithm recorded (dtc.conv_algorithm, dtc.workspace_bytes): run dtc-choose-conv-algorithms
module attributes {dtc.state_bytes = 0 : i64} {
  func.func @forward(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
      attributes {dtc.arena_bytes = 64 : i64, dtc.arena_unshared_bytes = 64 : i64} {
    %0 = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, dtc.arena_offsets = array<i64: 0>}
        : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
    return %0 : tensor<1x1x2x2xf32>
  }
}
