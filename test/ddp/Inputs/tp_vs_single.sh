#!/usr/bin/env bash
# Trains PREFIX-tp (compiled with dtc --tp) on N ranks and PREFIX-single
# (the same model and flags, no --tp) on REF_RANKS ranks (default 1: one
# process), with the same data, then compares their logged losses and saved
# weights (compare_runs.py, relative tolerance RTOL).
#   [REF_RANKS=R] tp_vs_single.sh PYTHON PREFIX N STEPS RTOL DATA [extra program flags...]
# Writes PREFIX-{tp,single}.{log,jsonl,onnx}.
set -euo pipefail
python=$1 prefix=$2 n=$3 steps=$4 rtol=$5 data=$6
shift 6
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run() {
  local name=$1 ranks=$2
  shift 2
  timeout 120 dtcrun --nproc-per-node="$ranks" --master-port=0 "$prefix-$name" --data="$data" \
    --shuffle=false --max-steps="$steps" --log-every=1 --metrics="$prefix-$name.jsonl" \
    --save="$prefix-$name.onnx" --timeout=60 "$@" > "$prefix-$name.log"
}
run tp "$n" "$@"
run single "${REF_RANKS:-1}" "$@"
"$python" "$here/compare_runs.py" --steps="$steps" --losses "$prefix-tp.jsonl" "$prefix-single.jsonl" \
  --loss-rtol="$rtol" --weights "$prefix-tp.onnx" "$prefix-single.onnx" --weight-rtol="$rtol"
