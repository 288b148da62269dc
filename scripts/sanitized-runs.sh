#!/bin/sh
# Profiles threaded and training programs under `deepcontext run` (default,
# --native, trace windows, exact CPU time) with a sanitized build's runtime
# loaded into Python, and fails at the first error the sanitizer reports.
# Python is not instrumented, so the sanitizer's runtime is preloaded: it
# must come before anything else. `make asan` and `make tsan` run it after
# their unit tests; the sanitizer's options (ASAN_OPTIONS, TSAN_OPTIONS)
# come from the caller.
#
#   scripts/sanitized-runs.sh BUILD_DIR PYTHON "PRELOADED LIBRARIES"
set -eu
BUILD=$1
PYTHON=$2
PRELOAD=$3

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for options in "" "--native" "--trace-fraction 0.3 --trace-window-ms 5" "--exact-cpu-time"; do
  for program in tests/integration/programs/threads.py \
                 tests/integration/programs/scopes_across_threads.py \
                 "bench/workloads/gpu_models.py --model mlp --device cpu --steps 20 --warmup 2"; do
    echo "sanitized-runs: deepcontext run $options -- $program"
    # shellcheck disable=SC2086
    LD_PRELOAD="$PRELOAD" DEEPCONTEXT_CACHE_DIR="$BUILD/cache" \
      "$BUILD/bin/deepcontext" run -q $options -o "$out/profile.dctx" -- "$PYTHON" $program \
      >/dev/null
  done
done
echo "sanitized-runs: no error reported"
