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

TESTS="common_test status_test cpu_clock_test cpu_counters_test python_frames_unit_test
       native_unit_test dlmonitor_test profiler_test gpu_core_test gpu_backend_test
       cupti_test xla_test"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DDEEPCONTEXT_SANITIZE_THREAD=ON -DDEEPCONTEXT_WERROR=ON \
      -DDEEPCONTEXT_PYTHON="$PYTHON"
# shellcheck disable=SC2086
cmake --build "$BUILD" --target $TESTS deepcontext deepcontext_cli deepcontext_python \
      deepcontext_torch_adapter_source

export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
for test in $TESTS; do
  echo "test-tsan: $test"
  # libunwind's thread-exit destructor locks a mutex after ThreadSanitizer
  # has let go of the exiting thread, and crashes inside ThreadSanitizer:
  # the libunwind back end is tested by the other builds.
  "$BUILD/bin/$test" --gtest_brief=1 --gtest_filter='-*libunwind*'
done

"$(dirname "$0")/sanitized-runs.sh" "$BUILD" "$PYTHON" "$(${CXX:-g++} -print-file-name=libtsan.so)"
