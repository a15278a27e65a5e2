#!/usr/bin/env bash
# Runs the whole model zoo (test/zoo/zoo_models.py) through dtc against
# PyTorch and writes the table to docs/zoo.md. onnxruntime, the second
# reference for forward outputs, comes from PyPI into a virtual environment
# beside the build that sees Debian's torch and numpy; without network the
# zoo runs without it (the table says "not installed").
#   scripts/zoo.sh [--models a,b] [--table FILE]     (default table: docs/zoo.md)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" >/dev/null || exit 1
venv="$build/venv-zoo"
python=/usr/bin/python3
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv" &&
    numpy_version="$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')" &&
    "$venv/bin/pip" install --quiet onnxruntime "numpy==$numpy_version" ||
    echo "zoo.sh: onnxruntime could not be installed; running without it" >&2
fi
"$venv/bin/python" -c "import onnxruntime" 2>/dev/null && python="$venv/bin/python"
args=("$@")
case " $* " in *" --table"*) ;; *) args+=(--table "$root/docs/zoo.md") ;; esac
exec "$python" "$root/test/zoo/run_zoo.py" --dtc "$build/bin/dtc" --out "$build/zoo" \
  --command "scripts/zoo.sh $*" "${args[@]}"
