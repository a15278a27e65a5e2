#!/usr/bin/env bash
# Copies the dialect and pass references mlir-tblgen generated in the build
# (from dialect/*.td and passes/Passes.td) to docs/reference/, where
# test/docs/reference-docs.test checks that they are current.
#   scripts/update-reference-docs.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
cp "$build/dialect/DtcDialect.md" "$root/docs/reference/dialect.md"
cp "$build/passes/Passes.md" "$root/docs/reference/passes.md"
echo "updated docs/reference/dialect.md and docs/reference/passes.md from $build"
