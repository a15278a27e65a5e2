#!/usr/bin/env bash
# Unpacks bundle.sh's bundle.tar.xz from the bundle folder $1 into
# /tmp/dtc-bundle (once) and prints that folder; check.sh and
# bench/gpu_throughput.py run the programs from there.
set -euo pipefail
packed="${1:?usage: unpack.sh BUNDLE}"
dest=/tmp/dtc-bundle
if [ ! -x "$dest/bin/dtcrun" ]; then
  rm -rf "$dest" && mkdir -p "$dest"
  if command -v xz >/dev/null; then
    xz -dc "$packed/bundle.tar.xz" | tar -C "$dest" -xf - >&2
  else  # Python's lzma, where the image has no xz
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
      "$packed/bundle.tar.xz" "$dest"
  fi
fi
echo "$dest"
