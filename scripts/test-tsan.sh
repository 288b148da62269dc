#!/bin/sh
# The injected runtime under ThreadSanitizer: its unit tests, then
# `deepcontext run` over threaded and training programs with the
# instrumented runtime loaded into Python (scripts/sanitized-runs.sh).
# Fails at the first data race.
# Not part of `make test` (about 12 minutes on 2 cores); `make tsan` runs it.
#
#   scripts/test-tsan.sh [BUILD_DIR] [PYTHON]
set -eu
BUILD=${1:-build-tsan}
PYTHON=${2:-python3}

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DDEEPCONTEXT_SANITIZE_THREAD=ON -DDEEPCONTEXT_WERROR=ON \
      -DDEEPCONTEXT_PYTHON="$PYTHON"
# The configure step names the runtime's GoogleTest programs
# (tests/unit/CMakeLists.txt).
TESTS=$(cat "$BUILD/runtime_unit_tests.txt")
[ -n "$TESTS" ] || { echo "test-tsan: no test programs in $BUILD/runtime_unit_tests.txt" >&2; exit 1; }
cmake --build "$BUILD" --target runtime_unit_tests deepcontext deepcontext_cli deepcontext_python \
      deepcontext_torch_adapter_source

export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
# The sampling tests claim their fake GPUs (runtime/gpu/counter_claims.h),
# each test process under a UUID of its own: the lock files stay in the
# build tree, as under ctest (tests/unit/runtime/cupti/CMakeLists.txt).
export DEEPCONTEXT_LOCK_DIR="$BUILD/gpu-locks"
mkdir -p "$DEEPCONTEXT_LOCK_DIR"
for test in $TESTS; do
  echo "test-tsan: $test"
  # libunwind's thread-exit destructor locks a mutex after ThreadSanitizer
  # has let go of the exiting thread, and crashes inside ThreadSanitizer:
  # the libunwind back end is tested by the other builds.
  "$BUILD/bin/$test" --gtest_brief=1 --gtest_filter='-*libunwind*'
done

"$(dirname "$0")/sanitized-runs.sh" "$BUILD" "$PYTHON" "$(${CXX:-g++} -print-file-name=libtsan.so)"
