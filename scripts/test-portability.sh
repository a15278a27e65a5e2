#!/usr/bin/env bash
# Runs the numeric tests under every kernel choice this CPU can execute and
# prints a table: OpenBLAS core types (OPENBLAS_CORETYPE: Prescott,
# Sandybridge, Haswell, Zen, SkylakeX, Cooperlake, as the CPU's flags allow),
# dtc's convolution path (DTC_CONV_ALGO: direct or im2col), dtc's own
# instruction-set dispatch (DTC_CPU_ISA: native, AVX2 where the CPU has
# AVX-512, or baseline x86-64) and the programs' default thread count
# (OMP_NUM_THREADS: 1 or 2).
#
#   scripts/test-portability.sh            each core type with the defaults,
#                                          plus each other choice on this
#                                          CPU's own core type
#   scripts/test-portability.sh --full     the whole cross product
#   scripts/test-portability.sh --suites "e2e gradcheck"   other lit suites
#   scripts/test-portability.sh --cores "Prescott Sandybridge"  only these
#                                          core types (no other variants)
#
# The same tests must pass in every row: a numeric test may compare only
# what does not depend on which kernels run (see docs/numeric-tests.md).
# Needs a build (scripts/build.sh). Writes the table to
# build/test/portability.md too; exits 1 if any row failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"
lit=(/usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py)
suites="e2e training gradcheck models pipeline ddp cuda onnx-node"
full=0
only_cores=""
while [ $# -gt 0 ]; do
  case "$1" in
    --full) full=1 ;;
    --suites) suites="$2"; shift ;;
    --suites=*) suites="${1#--suites=}" ;;
    --cores) only_cores="$2"; shift ;;
    --cores=*) only_cores="${1#--cores=}" ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-portability.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$build/tools/dtc/dtc" ] || [ -x "$build/bin/dtc" ] || {
  echo "test-portability.sh: no build in $build (run scripts/build.sh first)" >&2; exit 2; }

flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
cores=(Prescott)
has avx && cores+=(Sandybridge)
has avx2 fma && cores+=(Haswell Zen)
has avx512f avx512bw avx512dq avx512vl avx512cd && cores+=(SkylakeX)
has avx512f avx512bw avx512dq avx512vl avx512cd avx512_bf16 && cores+=(Cooperlake)
isas=(native baseline)
has avx512f avx512bw avx512dq avx512vl && isas=(native avx2 baseline)
native=$(/usr/bin/python3 -c '
import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' 2>/dev/null || echo unknown)
# OpenBLAS names its core types in lower case in openblas_get_corename().
for c in "${cores[@]}"; do [ "${c,,}" = "${native,,}" ] && native=$c; done
[[ " ${cores[*]} " == *" $native "* ]] || native=${cores[-1]}

rows=()  # "coretype conv isa threads"
if [ -n "$only_cores" ]; then
  for c in $only_cores; do rows+=("$c direct native 1"); done
elif [ "$full" = 1 ]; then
  for c in "${cores[@]}"; do for conv in direct im2col; do for isa in "${isas[@]}"; do
    for t in 1 2; do rows+=("$c $conv $isa $t"); done; done; done; done
else
  for c in "${cores[@]}"; do rows+=("$c direct native 1"); done
  rows+=("$native im2col native 1" "$native direct baseline 1" "$native direct native 2")
  [ "${#isas[@]}" = 3 ] && rows+=("$native direct avx2 1")
fi

lit_paths=()
for s in $suites; do [ -d "$build/test/$s" ] || [ -d "$root/test/$s" ] && lit_paths+=("$build/test/$s"); done
out="$build/test/portability.md"
mkdir -p "$build/test/portability"
{
  echo "| OPENBLAS_CORETYPE | DTC_CONV_ALGO | DTC_CPU_ISA | OMP_NUM_THREADS | unit tests | lit ($suites) | failed | seconds |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$out"
cat "$out"
status=0
for row in "${rows[@]}"; do
  read -r core conv isa threads <<< "$row"
  tag="$core-$conv-$isa-$threads"
  log="$build/test/portability/$tag.log"
  start=$(date +%s)
  env_vars=(OPENBLAS_CORETYPE="$core" DTC_CPU_ISA="$isa" OMP_NUM_THREADS="$threads")
  [ "$conv" = im2col ] && env_vars+=(DTC_CONV_ALGO=im2col)
  (cd "$build" && env "${env_vars[@]}" ctest --output-on-failure -E 'Cuda|Nccl') > "$log.ctest" 2>&1
  unit=$?
  env "${env_vars[@]}" "${lit[@]}" -v "${lit_paths[@]}" > "$log" 2>&1
  litrc=$?
  seconds=$(( $(date +%s) - start ))
  unit_summary=$(sed -nE 's/.*([0-9]+)% tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\3 run, \2 failed/p' "$log.ctest" | tail -1)
  lit_passed=$(sed -nE 's/^ *Passed *: +([0-9]+).*/\1/p' "$log" | head -1)
  lit_failed=$(sed -nE 's/^ *Failed *: +([0-9]+).*/\1/p' "$log" | head -1)
  failed=$( (grep -E '^FAIL: ' "$log" | sed -E 's/^FAIL: dtc :: ([^ ]+).*/\1/'; \
             grep -E '^\s+[0-9]+ - .*\(Failed\)' "$log.ctest" | awk '{print $3}') | paste -sd' ' -)
  echo "| $core | $conv | $isa | $threads | ${unit_summary:-?} | ${lit_passed:-0} passed, ${lit_failed:-0} failed | ${failed:--} | $seconds |" | tee -a "$out"
  if [ "$unit" -ne 0 ] || [ "$litrc" -ne 0 ]; then status=1; fi
done
echo "table: $out; logs: $build/test/portability/"
exit $status
