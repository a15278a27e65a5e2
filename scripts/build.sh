#!/usr/bin/env bash
# Configures and builds dtc into build/ (or $DTC_BUILD_DIR). Used by the demo
# and test commands; safe to re-run (incremental).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTC_BUILD_DIR:-$root/build}"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# DTC_WERROR=ON (the test command sets it): warnings are errors.
werror=()
[ -n "${DTC_WERROR:-}" ] && werror=(-DDTC_WERROR="$DTC_WERROR")
if [ ! -f "$build/CMakeCache.txt" ] || [ ${#werror[@]} -gt 0 ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${werror[@]}"
fi
cmake --build "$build" --parallel "$(nproc)" "$@"
