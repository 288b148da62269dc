#!/bin/sh
# The injected runtime under ThreadSanitizer: its unit tests, then
# `deepcontext run` over threaded and training programs with the
# instrumented runtime loaded into Python. Fails at the first data race.
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

# report_signal_unsafe: the CPU sampler's and the guard's signal handlers
# call only async-signal-safe functions, but ThreadSanitizer counts the
# runtime's own inlined atomics there as unsafe calls.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0"
for test in $TESTS; do
  echo "test-tsan: $test"
  # libunwind's thread-exit destructor locks a mutex after ThreadSanitizer
  # has let go of the exiting thread, and crashes inside ThreadSanitizer:
  # the libunwind back end is tested by the other builds.
  "$BUILD/bin/$test" --gtest_brief=1 --gtest_filter='-*libunwind*'
done

# Python is not instrumented: ThreadSanitizer's runtime must be loaded
# before anything else for the instrumented libdeepcontext.so to work.
TSAN_RUNTIME=$(${CXX:-g++} -print-file-name=libtsan.so)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for options in "" "--native" "--trace-fraction 0.3 --trace-window-ms 5" "--exact-cpu-time"; do
  for program in tests/integration/programs/threads.py \
                 tests/integration/programs/scopes_across_threads.py \
                 "bench/workloads/gpu_models.py --model mlp --device cpu --steps 20 --warmup 2"; do
    echo "test-tsan: deepcontext run $options -- $program"
    # shellcheck disable=SC2086
    LD_PRELOAD="$TSAN_RUNTIME" DEEPCONTEXT_CACHE_DIR="$BUILD/cache" \
      "$BUILD/bin/deepcontext" run -q $options -o "$out/profile.dctx" -- "$PYTHON" $program \
      >/dev/null
  done
done
echo "test-tsan: no data race found"
