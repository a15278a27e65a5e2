#!/usr/bin/env bash
# Packs what a GPU session needs to check and benchmark the CUDA target on the
# `device` machine (which cannot build dtc: no MLIR, no apt): CPU and CUDA
# programs of the MLP, LeNet, ResNet-18 and the GPT-style model, and of the
# MLP and LeNet with --precision=bf16 (for check.sh's loss comparisons), CUDA
# programs of ResNet-50 bf16, of the MLP at batch 64 and 4096,
# ResNet-50 at batch 64 on 224x224 and the GPT model (for
# bench/gpu_throughput.py), dtcrun, the CUDA kernel tests, and the non-CUDA
# shared libraries they load, as one bundle.tar.xz.
# The ResNets' weights are rewritten with low-entropy random values
# (lowentropy_weights.py) so their embedded models compress: a device call
# carries at most 64 MiB. Run here after a build (takes a few minutes):
#   scripts/gpu/bundle.sh .gpu        (add /.gpu/ to $(git rev-parse --git-dir)/info/exclude)
# (DTC_BUILD_DIR names another build folder; DTC_BUNDLE_ONLY="resnet50 gpt"
# packs only those programs, for a short device call after a change) then on
# the device:  run(command="scripts/gpu/check.sh .gpu", carry=[".gpu"])
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: bundle.sh OUTDIR}"
build="${DTC_BUILD_DIR:-$root/build}"
dtc="$build/bin/dtc"
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"

models="$(mktemp -d)"
trap 'rm -rf "$models"' EXIT
/usr/bin/python3 "$root/examples/models/export_models.py" --out "$models" resnet18 resnet50 >/dev/null
for m in resnet18 resnet50; do
  /usr/bin/python3 "$root/scripts/gpu/lowentropy_weights.py" "$models/$m.onnx" "$models/$m-le.onnx"
done
ex="$root/examples/models"
# name  targets  onnx  flags
while read -r name targets model flags; do
  if [ -n "${DTC_BUNDLE_ONLY:-}" ] && [[ " $DTC_BUNDLE_ONLY " != *" $name "* ]]; then continue; fi
  for target in ${targets//,/ }; do
    "$dtc" "$model" $flags --target="$target" -o "$out/bin/$name-$target"
  done
done <<MODELS
mlp cpu,cuda $ex/mlp.onnx --batch-size=64 --optimizer=sgd --lr=0.05 --momentum=0.9
mlp-bf16 cpu,cuda $ex/mlp.onnx --batch-size=64 --optimizer=sgd --lr=0.05 --momentum=0.9 --precision=bf16
lenet cpu,cuda $ex/lenet.onnx --batch-size=64 --optimizer=adam --lr=0.001
lenet-bf16 cpu,cuda $ex/lenet.onnx --batch-size=64 --optimizer=adam --lr=0.001 --precision=bf16
resnet18 cpu,cuda $models/resnet18-le.onnx --batch-size=16 --optimizer=sgd --lr=0.001
gpt cpu,cuda $ex/gpt.onnx --batch-size=64 --optimizer=adamw --lr=0.001 --weight-decay=0.01
mlp4096 cuda $ex/mlp.onnx --batch-size=4096 --optimizer=sgd --lr=0.05 --momentum=0.9
resnet50 cuda $models/resnet50-le.onnx --batch-size=64 --optimizer=sgd --lr=0.01 --momentum=0.9
resnet50-bf16 cuda $models/resnet50-le.onnx --batch-size=64 --optimizer=sgd --lr=0.01 --momentum=0.9 --precision=bf16
MODELS
if [ -z "${DTC_BUNDLE_ONLY:-}" ]; then
  "$dtc" "$ex/mlp.onnx" --optimizer=sgd --lr=0.05 --strategy=ddp --target=cuda \
    -o "$out/bin/mlp-ddp-cuda"
  "$dtc" "$ex/mlp.onnx" --optimizer=adam --lr=0.001 --strategy=fsdp --target=cuda \
    -o "$out/bin/mlp-fsdp-cuda"
fi
cp "$build/bin/dtcrun" "$build/runtime/test-runtime/dtcrt-test-cuda" \
  "$build/runtime/test-runtime/dtcrt-cuda-require-device" "$out/bin/"

# Shared libraries outside the C library and the CUDA toolkit (the device
# image has its own CUDA 13 and driver).
for f in "$out"/bin/*; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E 'cuda|libcudnn|libnccl|libcublas|libcudart|/libc\.so|/libm\.so|/libdl\.so|/libpthread\.so|/librt\.so|/ld-linux|libstdc\+\+|libgcc_s' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
strip --strip-unneeded "$out"/bin/* "$out"/lib/*
# One compressed file (single-threaded xz -9: its 64 MiB window also finds
# the CPU and CUDA programs' copies of the same embedded model).
tar -C "$out" -cf - bin lib | xz -9 -c > "$out/bundle.tar.xz"
rm -rf "$out/bin" "$out/lib"
du -sh "$out"
