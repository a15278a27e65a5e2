#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs packages,
# builds (warnings are errors: DTC_WERROR=ON), runs the runtime's unit tests
# (ctest) and every lit test (dialect, importer, passes, models, end to end),
# and prints a closing `N passed, N failed` line over both.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh" || exit 1
DTC_WERROR="${DTC_WERROR:-ON}" "$root/scripts/build.sh" || exit 1

mkdir -p "$build/test"
unit_log="$build/test/ctest-output.txt"
lit_log="$build/test/lit-output.txt"

(cd "$build" && ctest --output-on-failure) 2>&1 | tee "$unit_log"
unit_status=${PIPESTATUS[0]}
/usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v "$build/test" "$@" 2>&1 | tee "$lit_log"
lit_status=${PIPESTATUS[0]}

# ctest: "100% tests passed, 0 tests failed out of 59"
unit_total=$(sed -nE 's/.*tests failed out of ([0-9]+).*/\1/p' "$unit_log" | tail -1)
unit_failed=$(sed -nE 's/.* ([0-9]+) tests failed out of.*/\1/p' "$unit_log" | tail -1)
unit_total=${unit_total:-0}; unit_failed=${unit_failed:-0}
# lit: "  Passed: 42 (100.00%)", "  Failed: 1 (...)"; labels are padded
# ("  Passed           : 42") when a longer one such as "Expectedly Failed" shows.
lit_count() { sed -nE "s/^ *$1 *: +([0-9]+).*/\1/p" "$lit_log" | head -1; }
lit_ok=$(lit_count Passed); lit_xfail=$(lit_count "Expectedly Failed")
lit_passed=$(( ${lit_ok:-0} + ${lit_xfail:-0} ))
lit_failed=$(lit_count Failed)
lit_unexpected=$(lit_count "Unexpectedly Passed")
passed=$(( unit_total - unit_failed + ${lit_passed:-0} ))
failed=$(( unit_failed + ${lit_failed:-0} + ${lit_unexpected:-0} ))
if [ "$unit_status" -ne 0 ] && [ "$unit_failed" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$lit_status" -ne 0 ] && [ "${lit_failed:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ "$unit_status" -eq 0 ] && [ "$lit_status" -eq 0 ]
