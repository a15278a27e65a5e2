#!/usr/bin/env bash
# The main demo, from a fresh Debian 12 machine: installs packages, builds dtc,
# compiles the MNIST MLP (a real PyTorch model exported to ONNX) into a
# training program, trains it for 2 epochs on Fashion-MNIST and evaluates it
# on the test set after each epoch, then writes the trained model as ONNX.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

out="$build/demo"
mkdir -p "$out"
model="$root/examples/models/mlp.onnx"
data=/usr/share/datasets/fashion-mnist

echo "== dtc mlp.onnx --optimizer=adam --lr=0.001 -o $out/train"
"$build/bin/dtc" "$model" --optimizer=adam --lr=0.001 -o "$out/train"
"$build/bin/dtc" "$model" --optimizer=adam --lr=0.001 --report

echo
echo "== $out/train --data=$data --epochs=2 --eval --save=$out/mlp-trained.onnx"
"$out/train" --data="$data" --epochs=2 --eval --log-every=200 \
  --metrics="$out/metrics.jsonl" --save="$out/mlp-trained.onnx"

accuracy=$(sed -nE 's/.*"eval_accuracy":([0-9.]+).*/\1/p' "$out/metrics.jsonl" | tail -1)
echo
echo "test accuracy after 2 epochs: $(awk -v a="$accuracy" 'BEGIN { printf "%.2f%%", 100 * a }')"
echo "metrics: $out/metrics.jsonl; trained model: $out/mlp-trained.onnx"
