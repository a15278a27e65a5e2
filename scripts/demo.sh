#!/usr/bin/env bash
# The main demo, from a fresh Debian 12 machine: installs packages, builds dtc,
# compiles the MNIST MLP (a real PyTorch model exported to ONNX) into a
# training program, trains it for 2 epochs on Fashion-MNIST and evaluates it
# on the test set after each epoch, writes the trained model as ONNX; then
# compiles it data-parallel and trains it again on 2 ranks with dtcrun.
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

accuracy() {
  awk -v a="$(sed -nE 's/.*"eval_accuracy":([0-9.]+).*/\1/p' "$1" | tail -1)" \
    'BEGIN { printf "%.2f%%", 100 * a }'
}

echo
echo "== dtc mlp.onnx --strategy=ddp --optimizer=adam --lr=0.001 -o $out/train-ddp"
"$build/bin/dtc" "$model" --strategy=ddp --optimizer=adam --lr=0.001 -o "$out/train-ddp"
echo "== dtcrun --nproc-per-node=2 $out/train-ddp --data=$data --epochs=2 --eval"
"$build/bin/dtcrun" --nproc-per-node=2 "$out/train-ddp" --data="$data" --epochs=2 --eval \
  --log-every=200 --metrics="$out/metrics-ddp.jsonl" --save="$out/mlp-trained-ddp.onnx"

echo
echo "test accuracy after 2 epochs: 1 process $(accuracy "$out/metrics.jsonl"), 2 ranks $(accuracy "$out/metrics-ddp.jsonl")"
echo "metrics: $out/metrics.jsonl, $out/metrics-ddp.jsonl"
echo "trained models: $out/mlp-trained.onnx, $out/mlp-trained-ddp.onnx"
