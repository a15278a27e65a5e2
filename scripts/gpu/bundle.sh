#!/usr/bin/env bash
# Packs what a GPU session needs to check the CUDA target on the `device`
# machine (which cannot build dtc: no MLIR, no apt): the CPU and CUDA
# programs of the MLP and LeNet, dtcrun, the CUDA kernel tests,
# and the non-CUDA shared libraries they load. Run here after a build:
#   scripts/gpu/bundle.sh .gpu        (add /.gpu/ to $(git rev-parse --git-dir)/info/exclude)
# then on the device:  run(command="scripts/gpu/check.sh .gpu", carry=[".gpu"])
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: bundle.sh OUTDIR}"
build="$root/build"
dtc="$build/bin/dtc"
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"

# ResNet-18's programs embed its 44 MB of weights each: with the libraries
# they would pass the 64 MiB a device call may carry, so it is left out.
# model  onnx  flags
while read -r name model flags; do
  "$dtc" "$model" $flags -o "$out/bin/$name-cpu"
  "$dtc" "$model" $flags --target=cuda -o "$out/bin/$name-cuda"
done <<MODELS
mlp $root/examples/models/mlp.onnx --optimizer=sgd --lr=0.05 --momentum=0.9
lenet $root/examples/models/lenet.onnx --optimizer=adam --lr=0.001
MODELS
"$dtc" "$root/examples/models/mlp.onnx" --optimizer=sgd --lr=0.05 --strategy=ddp --target=cuda \
  -o "$out/bin/mlp-ddp-cuda"
cp "$build/bin/dtcrun" "$build/runtime/test-runtime/dtcrt-test-cuda" "$out/bin/"

# Shared libraries outside the C library and the CUDA toolkit (the device
# image has its own CUDA 13 and driver).
for f in "$out"/bin/*; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E 'cuda|libcudnn|libnccl|libcublas|libcudart|/libc\.so|/libm\.so|/libdl\.so|/libpthread\.so|/librt\.so|/ld-linux|libstdc\+\+|libgcc_s' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
strip --strip-unneeded "$out"/bin/* "$out"/lib/*
du -sh "$out"
