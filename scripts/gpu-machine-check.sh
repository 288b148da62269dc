#!/bin/bash
# Builds and tests DeepContext on the GPU machine (no network, no apt) in
# one go: header-only / static build dependencies travel as Debian packages
# in .deps/ (see README "GPU machine"), are unpacked into a private prefix,
# then the project is built and every test plus the benchmarks run with
# the machine's own Python and torch. Logs go to $OUT (or ./gpu-check-out).
# CPU_BENCH=0 skips the CPU benchmark; GPU_BENCH=resnet50,gpt2,mlp runs the
# GPU benchmark for those models (with GPU_BENCH_ARGS passed on); TESTS=0
# only builds (for benchmark runs).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
PREFIX=/tmp/deepcontext-deps
BUILD=${BUILD:-build-gpu}
PYTHON=${PYTHON:-$(command -v python3)}

mkdir -p "$PREFIX"
for deb in .deps/*.deb; do dpkg -x "$deb" "$PREFIX"; done

# The unpacked libraries (protobuf, cpp-httplib and what they need) are
# found through the prefix: pkg-config files name /usr, which the sysroot
# maps into it, and protoc and the built command load them from there.
libdir="$PREFIX/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_PATH="$libdir/pkgconfig:$PREFIX/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$PREFIX"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:$PREFIX/usr/bin"

extra=()
# No npm there: the viewer built elsewhere (build/web/dist copied to
# .deps/web-dist) is embedded as it is.
if [ -f .deps/web-dist/app.js ]; then
  extra+=("-DDEEPCONTEXT_WEB_DIST=$PWD/.deps/web-dist")
fi
# The machine's shared zlib, never the unpacked static libz.a, which is not
# position-independent and cannot go into the shared libraries.
rm -f "$libdir/libz.a"
libz=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1* 2>/dev/null | head -1)
if [ -n "$libz" ]; then extra+=("-DZLIB_LIBRARY=$libz"); fi
if [ ! -f /usr/include/zlib.h ]; then
  extra+=("-DZLIB_INCLUDE_DIR=$PREFIX/usr/include")
fi

{
  echo "== machine"; uname -a; nvidia-smi -L 2>&1 | head -2
  "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  g++ --version | head -1
} 2>&1 | tee "$OUT/machine.txt"

set -e
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
      -DDEEPCONTEXT_PYTHON="$PYTHON" "${extra[@]}" 2>&1 | tail -5
cmake --build "$BUILD" 2>&1 | tee "$OUT/build.log" | grep -E "warning|error" | head -20 || true
set +e
if [ "${TESTS:-1}" = 1 ]; then
ctest --test-dir "$BUILD" --output-on-failure -j 8 2>&1 | tee "$OUT/ctest.log" | tail -15
./scripts/demo.sh "$BUILD" "$PYTHON" > "$OUT/demo.txt" 2>&1; echo "demo exit $?"
head -60 "$OUT/demo.txt"
fi
if [ "${CPU_BENCH:-1}" = 1 ]; then
  "$PYTHON" bench/cpu_overhead.py --build "$BUILD" --python "$PYTHON" 2>&1 | tee "$OUT/bench.txt"
fi
if [ -n "${GPU_BENCH:-}" ]; then
  "$BUILD/bin/event_cost" 2>&1 | tee "$OUT/event_cost.txt"
  "$BUILD/bin/attribution_cost" 2>&1 | tee "$OUT/attribution_cost.txt"
  [ -x "$BUILD/bin/gpu_launch_cost" ] && "$BUILD/bin/gpu_launch_cost" 2>&1 | tee "$OUT/launch_cost.txt"
  # GPU_BENCH_ARGS: e.g. "--timing-only", "--breakdown" or "--in-process 10"
  # (one call has ten minutes: three models with every row take longer).
  # shellcheck disable=SC2086
  "$PYTHON" bench/gpu_overhead.py --build "$BUILD" --python "$PYTHON" --models "$GPU_BENCH" \
      --repeats "${GPU_BENCH_REPEATS:-3}" ${GPU_BENCH_ARGS:-} 2>&1 | tee "$OUT/gpu_bench.txt"
fi
