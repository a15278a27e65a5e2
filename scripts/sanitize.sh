#!/usr/bin/env bash
# Builds the runtime and its communicator and trainer tests under a sanitizer
# and runs them: AddressSanitizer + UBSan ("address", into build-asan/) or
# ThreadSanitizer ("thread", into build-tsan/). The communicators use shared
# memory, futexes, atomics and threads; the trainer signals, files and
# threads: these are the tests where a memory or threading bug would hide.
# Any sanitizer report fails the test that raised it (exit 1). The timing
# tests (CommShm.Timing*) are left out: they only print bandwidths, which
# mean nothing under a sanitizer, and TSan's slowdown runs them past their
# time limits. TSan's suppressions (scripts/tsan-suppressions.txt) cover
# only reports inside uninstrumented libraries, each with its reason.
#
# usage: scripts/sanitize.sh [address|thread]...   (default: address thread)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(address thread)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
targets=(dtcrt_comm_tests dtcrt_trainer_tests dtcrt_fake_program dtcrt_fake_pipeline)
status=0
for kind in "${kinds[@]}"; do
  case "$kind" in
    address) build="${DTC_ASAN_BUILD_DIR:-$root/build-asan}" ;;
    thread) build="${DTC_TSAN_BUILD_DIR:-$root/build-tsan}" ;;
    *) echo "sanitize.sh: unknown sanitizer '$kind' (address or thread)" >&2; exit 2 ;;
  esac
  # -O1 -g1 (line tables): what the sanitizers' manuals suggest, and half
  # the compile time of RelWithDebInfo's -O2 -g on CI's two cores. GCC's
  # -Wmaybe-uninitialized misfires inside libstdc++ at -O1 with the
  # sanitizers; the normal build keeps it.
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG -Wno-maybe-uninitialized" \
    -DDTC_SANITIZE="$kind" >/dev/null || exit 1
  # The CUDA fake program (a CLI test) exists only where the toolkit does.
  extra=()
  known="$(cmake --build "$build" --target help 2>/dev/null)"
  [[ "$known" == *dtcrt_fake_cuda_program* ]] && extra=(dtcrt_fake_cuda_program)
  cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}" "${extra[@]}" || exit 1
  # Reports end the process with an error; leaks are reported at exit.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan-suppressions.txt"
  echo "== $kind: communicator and trainer tests"
  if ! (cd "$build" && ctest --output-on-failure -R '^runtime\.(comm|trainer)\.' -E '\.Timing'); then
    status=1
  fi
done
exit $status
