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
PREFIX=/tmp/deepcontext-deps
BUILD=${BUILD:-$PWD/build-gpu}
PYTHON=${PYTHON:-$(command -v python3)}
mkdir -p "$PREFIX"
for deb in .deps/*.deb; do dpkg -x "$deb" "$PREFIX"; done
libdir="$PREFIX/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_PATH="$libdir/pkgconfig:$PREFIX/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$PREFIX"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:$PREFIX/usr/bin"
extra=()
# No npm there: the viewer built elsewhere is embedded as it is.
if [ -f .deps/web-dist/app.js ]; then extra+=("-DDEEPCONTEXT_WEB_DIST=$PWD/.deps/web-dist"); fi
rm -f "$libdir/libz.a"
libz=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1* 2>/dev/null | head -1)
if [ -n "$libz" ]; then extra+=("-DZLIB_LIBRARY=$libz"); fi
if [ ! -f /usr/include/zlib.h ]; then extra+=("-DZLIB_INCLUDE_DIR=$PREFIX/usr/include"); fi
{
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_PREFIX_PATH="$PREFIX/usr" -DDEEPCONTEXT_PYTHON="$PYTHON" "${extra[@]}" | tail -5
  cmake --build "$BUILD" -j"$(nproc)" --target deepcontext deepcontext_cli deepcontext_python \
        deepcontext_torch_adapter_source | tail -3
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
