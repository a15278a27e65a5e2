#!/usr/bin/env bash
# Installs what building and testing dtc needs on Debian 12, with apt (via sudo
# when not root). Does nothing when everything is already there, so the demo
# and test commands can call it every time.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config
  # compiler: MLIR/LLVM 19, ONNX parsing/checking/shape inference, fmt
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libfmt-dev zlib1g-dev libzstd-dev
  # runtime: BLAS kernels, oneDNN convolutions, Gloo communicator, libcrypto (job authentication),
  # image decoding (image-folder datasets)
  libopenblas-dev libdnnl-dev libgloo-dev libssl-dev libgtest-dev libjpeg62-turbo-dev libpng-dev
  # references and data for the tests: PyTorch (CPU), ONNX, Fashion-MNIST,
  # ONNX's backend node tests
  python3 python3-numpy python3-torch python3-torchvision python3-onnx python3-matplotlib
  dataset-fashion-mnist libonnx-testdata
  # fuzzing (scripts/fuzz.sh): clang with libFuzzer and the sanitizers
  clang-14 libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "dtc: installing ${#missing[@]} Debian packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "dtc: need root or sudo to install packages" >&2; exit 1; }
  sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
