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
BUILD=${BUILD:-build-gpu}
PYTHON=${PYTHON:-$(command -v python3)}

# Build dependencies from .deps/ (scripts/gpu-machine-deps.sh).
source scripts/gpu-machine-deps.sh

{
  echo "== machine"; uname -a; nvidia-smi -L 2>&1 | head -2
  "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  g++ --version | head -1
} 2>&1 | tee "$OUT/machine.txt"

set -e
gpu_machine_configure "$BUILD" "$PYTHON" 2>&1 | tail -5
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
