#!/bin/sh
# Cross-compiles the injected runtime, the format library and their unit tests
# for aarch64 (Debian's g++-aarch64-linux-gnu) and runs the tests under
# qemu-user. Part of `make test`; the packages come from scripts/install-deps.sh.
#
#   scripts/test-aarch64.sh [BUILD_DIR] [BUILD_TYPE]   (extra ctest args: $AARCH64_CTEST_ARGS)
set -eu
BUILD=${1:-build-aarch64}
BUILD_TYPE=${2:-RelWithDebInfo}

if [ "$(uname -m)" != "x86_64" ]; then
  echo "test-aarch64: skipped (cross tests run on x86-64 hosts only; here the native build is tested)"
  exit 0
fi
for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test-aarch64: $tool not found (run \`make deps\`)" >&2
    exit 1
  fi
done

# The committed aarch64 CPython layouts must equal what the aarch64 ABI gives
# for the installed interpreters' headers (cross-compiled, run under qemu).
python3 runtime/python/layouts/generate_layouts.py --arch aarch64 --check

cmake -S . -B "$BUILD" -G Ninja \
      -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
      -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
      -DDEEPCONTEXT_RUNTIME_ONLY=ON -DDEEPCONTEXT_WERROR=ON
cmake --build "$BUILD"
# shellcheck disable=SC2086
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" ${AARCH64_CTEST_ARGS:-}
