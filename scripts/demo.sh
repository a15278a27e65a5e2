#!/usr/bin/env bash
# The main demo, from a fresh Debian 12 machine: installs packages, builds dtc
# and compiles the MNIST MLP (a real PyTorch model exported to ONNX).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" --target dtc

model="$root/examples/models/mlp.onnx"
echo "== dtc $model --emit=mlir  (the model imported into the dtc dialect)"
"$build/bin/dtc" "$model" --emit=mlir
echo
echo "Training is not implemented yet: this demo stops after compilation."
