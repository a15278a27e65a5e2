#!/usr/bin/env bash
# Trains PREFIX-fsdp and PREFIX-ddp (two dtc programs of one model) on N
# ranks with the same data and flags, then compares their logged losses and
# saved weights (compare_runs.py, relative tolerance RTOL).
#   fsdp_vs_ddp.sh PYTHON PREFIX N STEPS RTOL DATA [extra program flags...]
# Writes PREFIX-{fsdp,ddp}-N.{log,jsonl,onnx}.
set -euo pipefail
python=$1 prefix=$2 n=$3 steps=$4 rtol=$5 data=$6
shift 6
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for s in fsdp ddp; do
  timeout 120 dtcrun --nproc-per-node="$n" --master-port=0 "$prefix-$s" --data="$data" --shuffle=false \
    --max-steps="$steps" --log-every=1 --metrics="$prefix-$s-$n.jsonl" --save="$prefix-$s-$n.onnx" \
    --timeout=60 "$@" > "$prefix-$s-$n.log"
done
"$python" "$here/compare_runs.py" --steps="$steps" --losses "$prefix-fsdp-$n.jsonl" "$prefix-ddp-$n.jsonl" \
  --loss-rtol="$rtol" --weights "$prefix-fsdp-$n.onnx" "$prefix-ddp-$n.onnx" --weight-rtol="$rtol"
