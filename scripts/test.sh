#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs packages,
# builds, runs every lit test (dialect, importer, passes, end to end) and
# prints a closing `N passed, N failed` line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

log="$build/test/lit-output.txt"
mkdir -p "$build/test"
set +e
/usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v "$build/test" "$@" | tee "$log"
status=${PIPESTATUS[0]}
set -e
count() { sed -nE "s/^ *$1: +([0-9]+).*/\1/p" "$log" | head -1; }
passed=$(count Passed); passed=${passed:-0}
failed=$(( $(count Failed || true) + 0 ))
unexpected=$(( $(count "Unexpectedly Passed" || true) + 0 ))
echo "$passed passed, $((failed + unexpected)) failed"
exit "$status"
