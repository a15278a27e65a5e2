#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ with clang (AddressSanitizer and
# UBSan) into build-fuzz/ (or $DTC_FUZZ_BUILD_DIR) and runs each for N
# executions, starting from its seed corpus fuzz/corpus/NAME (read-only:
# inputs the fuzzer finds go to BUILD/fuzz-work/NAME). A crash, sanitizer
# report, leak or timeout is saved as BUILD/fuzz-artifacts/NAME/crash-... and
# makes the script exit 1. Prints one line per harness:
#   fuzz-npy: 20000 runs in 12 s, 0 crashes, 87 edges covered
#
# usage: scripts/fuzz.sh [--runs N] [--seed S] [--only NAME] [--build-only | --no-build]
#   --runs N      executions per harness (default 20000)
#   --seed S      libFuzzer's random seed (default 1: a given tree and corpus
#                 always explore the same inputs, so CI cannot turn red by
#                 chance; 0 picks a new seed each run, for long runs)
#   --only NAME   one harness (onnx-import, idx, npy, checkpoint)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_FUZZ_BUILD_DIR:-$root/build-fuzz}"
runs=20000
seed=1
only=""
build_only=0
no_build=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --runs=*) runs="${1#--runs=}"; shift ;;
    --seed) seed="$2"; shift 2 ;;
    --seed=*) seed="${1#--seed=}"; shift ;;
    --only) only="$2"; shift 2 ;;
    --only=*) only="${1#--only=}"; shift ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
cc="${DTC_FUZZ_CC:-clang-14}"
cxx="${DTC_FUZZ_CXX:-clang++-14}"
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz.sh: $cxx not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi
if [ "$no_build" = 0 ] && [ ! -f "$build/CMakeCache.txt" ]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDTC_FUZZ=ON \
    -DDTCRT_BUILD_TESTS=OFF -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
fi
[ "$no_build" = 0 ] && cmake --build "$build" --parallel "$(nproc)" -t dtc-fuzzers
[ "$build_only" = 1 ] && exit 0

# ASan's leak check stays on; protobuf and MLIR keep process-wide
# singletons, which it does not report (they stay reachable).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for name in onnx-import idx npy checkpoint; do
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  work="$build/fuzz-work/$name"
  artifacts="$build/fuzz-artifacts/$name/"
  mkdir -p "$work" "$artifacts"
  # The harnesses that read files write each input to a scratch folder:
  # in memory when /dev/shm is there.
  scratch=$(mktemp -d /dev/shm/dtc-fuzz-XXXXXX 2>/dev/null || mktemp -d)
  log="$build/fuzz-artifacts/$name.log"
  start=$(date +%s)
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a huge
  # allocation from a small header is a bug too.
  if TMPDIR="$scratch" "$build/fuzz/fuzz-$name" -runs="$runs" -seed="$seed" -timeout=10 -rss_limit_mb=2048 \
       -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts" \
       "$work" "$root/fuzz/corpus/$name" >"$log" 2>&1; then
    crashes=0
  else
    crashes=1
    status=1
  fi
  rm -rf "$scratch"
  seconds=$(( $(date +%s) - start ))
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  edges=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' "$log" | tail -1)
  echo "fuzz-$name: ${execs:-?} runs in $seconds s, $crashes crashes, ${edges:-?} edges covered"
  if [ "$crashes" != 0 ]; then
    grep -E "ERROR|runtime error|SUMMARY|Test unit written" "$log" | head -20 >&2
    echo "fuzz-$name: see $log" >&2
  fi
done
exit $status
