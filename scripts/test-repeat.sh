#!/usr/bin/env bash
# Runs the whole test suite several times in a row, optionally with every
# core kept busy by another process, and prints one line per run: the check
# that no test depends on timing, free ports or luck.
#
#   scripts/test-repeat.sh [--runs N] [--burn] [-- LIT ARGS...]
#
#   --runs N   how many consecutive runs (default 5)
#   --burn     start one CPU-burning process per core for the whole time
#              (the multi-process tests must pass on a saturated machine)
#
# Needs a build (scripts/build.sh); no retries. Exits 1 if any run failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"
runs=5 burn=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --runs=*) runs="${1#--runs=}" ;;
    --burn) burn=1 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-repeat.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

burners=()
stop_burners() { [ ${#burners[@]} -gt 0 ] && kill "${burners[@]}" 2>/dev/null; wait 2>/dev/null; }
trap stop_burners EXIT
if [ "$burn" = 1 ]; then
  for _ in $(seq "$(nproc)"); do
    ( trap 'exit 0' TERM; while :; do :; done ) &
    burners+=($!)
  done
  echo "burning ${#burners[@]} cores (pids ${burners[*]})"
fi

mkdir -p "$build/test/repeat"
status=0
for i in $(seq "$runs"); do
  log="$build/test/repeat/run-$i.log"
  start=$(date +%s)
  (cd "$build" && ctest --output-on-failure) > "$log" 2>&1
  unit=$?
  /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v "$build/test" "$@" >> "$log" 2>&1
  lit=$?
  failed=$( (grep -E '^FAIL: |^UNRESOLVED: ' "$log" | sed -E 's/^[A-Z]+: dtc :: ([^ ]+).*/\1/'; \
             grep -E '^\s+[0-9]+ - .*\((Failed|Timeout)\)' "$log" | awk '{print $3}') | paste -sd' ' -)
  echo "run $i: ctest exit $unit, lit exit $lit, $(( $(date +%s) - start )) s, failed: ${failed:-none}"
  if [ "$unit" -ne 0 ] || [ "$lit" -ne 0 ]; then status=1; fi
done
exit $status
