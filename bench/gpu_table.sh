#!/bin/bash
# On the GPU machine (no network, no apt): builds only what the overhead
# table needs with the build dependencies from .deps/ (as
# scripts/gpu-machine-check.sh does), then prints the table of
# bench/gpu_overhead.py --table. Logs go to $OUT (default ./gpu-table-out):
# build.txt, table.txt, native_test.txt.
#   bench/gpu_table.sh [--quick] [other gpu_overhead.py options]
set -uo pipefail
OUT=${OUT:-$PWD/gpu-table-out}
mkdir -p "$OUT"
BUILD=${BUILD:-$PWD/build-gpu}
PYTHON=${PYTHON:-$(command -v python3)}
source scripts/gpu-machine-deps.sh
{
  gpu_machine_configure "$BUILD" "$PYTHON" -DCMAKE_BUILD_TYPE=RelWithDebInfo | tail -5
  cmake --build "$BUILD" -j"$(nproc)" --target deepcontext deepcontext_cli deepcontext_python \
        deepcontext_torch_adapter_source dc_cupti_floor | tail -3
} > "$OUT/build.txt" 2>&1
tail -2 "$OUT/build.txt"
export PYTHONUNBUFFERED=1
timeout "${TABLE_TIMEOUT:-600}" "$PYTHON" bench/gpu_overhead.py --build "$BUILD" \
    --python "$PYTHON" --table "$@" 2>&1 | tee "$OUT/table.txt"
# The unwinder's own tests on this machine's compiler and libraries.
if [ "${NATIVE_TESTS:-1}" = 1 ]; then
  cmake --build "$BUILD" -j"$(nproc)" --target native_unit_test > "$OUT/native_test.txt" 2>&1 &&
    "$BUILD/bin/native_unit_test" --gtest_filter='Cfi*:*Unwinder*:NativeStack*' \
      >> "$OUT/native_test.txt" 2>&1
  tail -3 "$OUT/native_test.txt"
fi
