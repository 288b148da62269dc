#!/bin/bash
# On the GPU machine (no network): builds what `deepcontext run` needs with
# the build dependencies from .deps/ (see README "GPU machine"), then runs
# tests/gpu/programs/gpu_stalls.py (a memory-bound and a compute-bound
# Triton kernel) without the profiler, under `deepcontext run`, and under
# `deepcontext run --gpu-samples`; prints the stall reasons per kernel,
# checks that they point the right way and land under the right Python
# lines, and prints the overhead of each against no profiler. Also shows
# what `--cpu-counters` records there. Logs go to $OUT (default
# ./gpu-finegrained-out). Fits in about 4 minutes on the H200 machine.
# PARTS picks what runs: "samples" (the above), "metrics" (programs/
# gpu_metrics.py under `deepcontext run --gpu-metrics`: hardware counters
# per kernel, checked by tests/gpu/check_metrics.py, their CUPTI values
# recorded in $OUT/gpu_metrics_record.txt, the fixture format of the CPU
# tests); default both.
# RESNET=1 adds ResNet-50's step time with --gpu-samples, --gpu-metrics,
# --cpu-counters and Proton's instruction sampling against no profiler
# (bench/gpu_overhead.py --fine-grained; about 3 more minutes; RESNET_S
# bounds it); RESNET=quick times the same one run each, ResNet-50 steps
# printed as each run ends, and stops starting runs once DEADLINE (epoch
# seconds) is less than 30 s away; UNIT=1 the sampling and counter unit
# tests.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-finegrained-out}
mkdir -p "$OUT"
BUILD=${BUILD:-$PWD/build-gpu}
PYTHON=${PYTHON:-$(command -v python3)}
ITERATIONS=${ITERATIONS:-200}
PROGRAM=tests/gpu/programs/gpu_stalls.py
PARTS=${PARTS:-samples metrics}
source scripts/gpu-machine-deps.sh
{
  nvidia-smi -L
  gpu_machine_configure "$BUILD" "$PYTHON" | tail -3
  cmake --build "$BUILD" --target deepcontext deepcontext_cli deepcontext_python \
        deepcontext_reader deepcontext_torch_adapter_source | tail -3
  # UNIT=1: also the sampling logic's CPU tests against this machine's
  # CUPTI headers (a separate build: the target exists only where
  # GoogleTest was found; about a minute more).
  if [ "${UNIT:-0}" = 1 ]; then
    cmake --build "$BUILD" --target gpu_backend_test | tail -1 &&
      "$BUILD/bin/gpu_backend_test" --gtest_filter='*PcSampling*:*GpuMetrics*' | tail -3
  fi
} > "$OUT/build.txt" 2>&1
tail -4 "$OUT/build.txt"
export DEEPCONTEXT_CACHE_DIR=$BUILD/cache PYTHONPATH=$BUILD/python

calc() { "$PYTHON" -c "print(round($1, 3))"; }
loop_s() { sed -n 's/^loop_s=//p' "$1" | tail -1; }
run_timed() {  # name, then the command; prints wall seconds, keeps output
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  timeout 150 "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  end=$(date +%s.%N)
  echo "$name: exit $rc, wall $(calc "$end - $start") s, loop $(loop_s "$OUT/$name.txt") s"
  [ $rc -eq 0 ] || tail -5 "$OUT/$name.txt"
}

if [[ " $PARTS " == *" samples "* ]]; then
{
  echo "== runs ($ITERATIONS iterations of copy_kernel + fma_kernel)"
  # Triton's cache is warm after the first run: every run below compiles nothing.
  "$PYTHON" "$PROGRAM" 2 > /dev/null 2>&1
  run_timed plain "$PYTHON" "$PROGRAM" "$ITERATIONS"
  run_timed profiled "$BUILD/bin/deepcontext" run -q -o "$OUT/profiled.dctx" -- \
    "$PYTHON" "$PROGRAM" "$ITERATIONS"
  run_timed sampled "$BUILD/bin/deepcontext" run -q --gpu-samples -o "$OUT/sampled.dctx" -- \
    "$PYTHON" "$PROGRAM" "$ITERATIONS"
  run_timed counters "$BUILD/bin/deepcontext" run -q --cpu-counters -o "$OUT/counters.dctx" -- \
    "$PYTHON" "$PROGRAM" "$ITERATIONS"
  plain=$(loop_s "$OUT/plain.txt")
  for name in profiled sampled counters; do
    value=$(loop_s "$OUT/$name.txt")
    if [ -n "$plain" ] && [ -n "$value" ]; then
      echo "overhead $name: $(calc "$value / $plain")x the timed loop without the profiler"
    fi
  done
  echo
  echo "== stall reasons per kernel (--gpu-samples)"
  "$PYTHON" tests/gpu/check_stalls.py "$OUT/sampled.dctx" "$PROGRAM"
  echo
  echo "== report (stall section, SASS from the $(ls "$OUT/sampled.cubins" 2>/dev/null | wc -l) kept cubins) and analyze"
  COLUMNS=200 "$BUILD/bin/deepcontext" report "$OUT/sampled.dctx" --metric gpu_time \
    | sed -n '/^Warning/p;/GPU stall reasons/,$p'
  "$BUILD/bin/deepcontext" analyze "$OUT/sampled.dctx" | head -40
  echo
  echo "== --cpu-counters"
  "$PYTHON" - "$OUT/counters.dctx" <<'PY'
import sys, deepcontext
p = deepcontext.load(sys.argv[1])
for key in ("cpu_counters", "cpu_counter_threads", "warning_cpu_counters"):
    if key in p.metadata:
        print("%s: %s" % (key, p.metadata[key]))
for metric in ("cpu_cycles", "cpu_instructions", "cpu_cache_misses"):
    if metric in p.metrics:
        print("%s total: %.3g" % (metric, p.total(metric)))
PY
} 2>&1 | tee "$OUT/summary.txt"
fi
if [[ " $PARTS " == *" metrics "* ]]; then
{
  METRICS_PROGRAM=tests/gpu/programs/gpu_metrics.py
  echo "== --gpu-metrics (copy_kernel, fma_kernel, fp16 GEMM; 20 iterations)"
  "$PYTHON" "$METRICS_PROGRAM" 2 > /dev/null 2>&1  # Triton's cache, warm
  run_timed metrics_plain "$PYTHON" "$METRICS_PROGRAM" 20
  run_timed metrics_profiled "$BUILD/bin/deepcontext" run -q -o "$OUT/metrics_plain.dctx" -- \
    "$PYTHON" "$METRICS_PROGRAM" 20
  rm -f "$OUT/gpu_metrics_record.txt"
  DEEPCONTEXT_GPU_METRICS_RECORD="$OUT/gpu_metrics_record.txt" \
    run_timed metrics "$BUILD/bin/deepcontext" run -q --gpu-metrics -o "$OUT/metrics.dctx" -- \
    "$PYTHON" "$METRICS_PROGRAM" 20
  plain=$(loop_s "$OUT/metrics_plain.txt")
  for name in metrics_profiled metrics; do
    value=$(loop_s "$OUT/$name.txt")
    if [ -n "$plain" ] && [ -n "$value" ]; then
      echo "overhead $name: $(calc "$value / $plain")x the timed loop without the profiler"
    fi
  done
  "$PYTHON" tests/gpu/check_metrics.py "$OUT/metrics.dctx"
  echo "== report (counter section) and analyze"
  COLUMNS=200 "$BUILD/bin/deepcontext" report "$OUT/metrics.dctx" --metric gpu_time \
    | sed -n '1,12p;/^GPU hardware counters/,$p'
  "$BUILD/bin/deepcontext" analyze "$OUT/metrics.dctx" | head -40
} 2>&1 | tee "$OUT/metrics_summary.txt"
fi
if [ "${RESNET:-0}" = 1 ]; then
  timeout "${RESNET_S:-600}" "$PYTHON" bench/gpu_overhead.py --build "$BUILD" --python "$PYTHON" --models resnet50 \
      --repeats 1 --timing-only --fine-grained 2>&1 | tee "$OUT/resnet50.txt"
fi
if [ "${RESNET:-0}" = quick ]; then
  workload=(bench/workloads/gpu_models.py --model resnet50 --steps "${STEPS:-10}" --warmup 3)
  resnet_step() {  # name, then the command; appends "name step_ms=..." to resnet50.txt
    local name=$1; shift
    if [ -n "${DEADLINE:-}" ] && [ $(( DEADLINE - $(date +%s) )) -lt 30 ]; then
      echo "$name: skipped (deadline)" | tee -a "$OUT/resnet50.txt"; return
    fi
    local output
    output=$(timeout 100 "$@" 2> /tmp/resnet_err.txt | grep -o 'step_ms=[0-9.]*' | tail -1)
    echo "$name ${output:-failed: $(tail -c 300 /tmp/resnet_err.txt | tr '\n' ' ')}" \
      | tee -a "$OUT/resnet50.txt"
  }
  resnet_step "no profiler" "$PYTHON" "${workload[@]}"
  resnet_step "deepcontext run --gpu-metrics" "$BUILD/bin/deepcontext" run -q --gpu-metrics \
    -o /tmp/r1.dctx -- "$PYTHON" "${workload[@]}"
  resnet_step "deepcontext run --gpu-samples" "$BUILD/bin/deepcontext" run -q --gpu-samples \
    -o /tmp/r2.dctx -- "$PYTHON" "${workload[@]}"
  resnet_step "proton mode=pcsampling" "$PYTHON" "${workload[@]}" --proton /tmp/r3 \
    --proton-mode pcsampling
  resnet_step "deepcontext run" "$BUILD/bin/deepcontext" run -q -o /tmp/r0.dctx -- \
    "$PYTHON" "${workload[@]}"
  resnet_step "deepcontext run --gpu-metrics (every launch)" "$BUILD/bin/deepcontext" run -q \
    --gpu-metrics --gpu-metrics-kernels 1000000 -o /tmp/r4.dctx -- "$PYTHON" "${workload[@]}"
  PYTHONPATH=$BUILD/python "$PYTHON" - /tmp/r1.dctx >> "$OUT/resnet50.txt" 2>&1 <<'PY'
import sys, deepcontext
p = deepcontext.load(sys.argv[1])
for key in sorted(p.metadata):
    if key.startswith("gpu_metrics") or key.startswith("warning_"):
        print("%s: %s" % (key, p.metadata[key]))
PY
fi
