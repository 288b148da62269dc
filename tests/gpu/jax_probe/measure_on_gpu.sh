#!/bin/bash
# On the GPU machine, in one go: builds the runtime library and the CLI
# (profiles also come back, to be read with summarize_jax_profile.py and
# check_jax_profile.py where the CLI is built), records the large
# MLP's command buffer (record_probe.so) while it builds, then profiles
# tests/gpu/programs/gpu_jax.py and times the JAX MLP and attention steps
# of bench/workloads/jax_models.py: plain and jax.profiler in one process,
# and under the runtime (tests/gpu/jax_probe/dc_run.sh, what `deepcontext
# run` sets; DEEPCONTEXT_XLA_STATS=1 prints where the ranges' cost goes).
# Then both models again with XLA's command buffers off, under the runtime
# and under jax.profiler, for the per-operation comparison (with command
# buffers on, jax.profiler reports only command_buffer_N). Each pair shares
# JAX's compilation cache, so that both run the same executable (separate
# compilations may autotune differently and number the instructions
# differently). Where the CLI was built, summarize_jax_profile.py prints,
# after each pair, the steady GPU time below an HLO operation, below a line
# of the jitted function and still below a command buffer, and the share of
# operations / of time within 2 % of jax.profiler's.
# Extra environment for the profiled runs: DC_ENV (e.g. DEEPCONTEXT_XLA_OPS=0).
# Writes into $OUT: log.txt, probe.txt, the profiles, jax.profiler's
# per-operation numbers (jp_*.json) and the recorded events.
set -uo pipefail
OUT=${OUT:-$PWD/jax-measure-out}
mkdir -p "$OUT"
BUILD=${BUILD:-$PWD/build-gpu}
P=tests/gpu/jax_probe
LOG=$OUT/log.txt
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
source scripts/gpu-machine-deps.sh
probe() {
  local cupti cuda=${CUDA_HOME:-/usr/local/cuda}
  cupti=$(python3 - <<'PY'
import glob, os, site
for s in site.getsitepackages():
    for p in sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib", "libcupti.so.*"))):
        print(p); raise SystemExit
print("/usr/local/cuda/lib64/libcupti.so")
PY
)
  g++ -std=c++17 -O1 -shared -fPIC -o /tmp/record_probe.so $P/record_probe.cc -I"$cuda/include" \
    -I"$cuda/targets/x86_64-linux/include" "$cupti" -L"$cuda/lib64/stubs" \
    -L"$cuda/targets/x86_64-linux/lib/stubs" -lcuda -Wl,-rpath,"$(dirname "$cupti")" || return
  mkdir -p /tmp/probe
  NVTX_INJECTION64_PATH=$cupti LD_PRELOAD=/tmp/record_probe.so PROBE_OUT=/tmp/probe/ev_large \
    timeout 100 python3 $P/probe_programs.py record_large /tmp/probe
  # One file per process (compiler subprocesses too): the largest is JAX's.
  local events
  events=$(ls -S /tmp/probe/ev_large.*.jsonl | head -1)
  python3 $P/trim_fixture.py "$events" /tmp/probe/large.jsonl &&
    gzip -9c /tmp/probe/large.jsonl > "$OUT/train_step_large_graphs.jsonl.gz"
}
if [ "${PROBE:-1}" = 1 ]; then probe > "$OUT/probe.txt" 2>&1 & fi
{ gpu_machine_configure "$BUILD" "$(command -v python3)" -DCMAKE_BUILD_TYPE=RelWithDebInfo | tail -2
  cmake --build "$BUILD" -j16 --target deepcontext deepcontext_python deepcontext_cli | tail -2
} > "$LOG" 2>&1
wait
W=bench/workloads/jax_models.py
run() {  # label, then env assignments and the command
  local label=$1; shift
  echo "== $label" >> "$LOG"
  timeout 60 env "$@" 2>&1 | grep -v "^W0000\|^I0000\|^E0000" | tail -3 >> "$LOG"
}
DC="${DC_ENV:-} $P/dc_run.sh $BUILD"
# Profiled runs compile (their modules register source lines) and fill
# JAX's compilation cache; the plain runs after them load from it.
export JAX_COMPILATION_CACHE_DIR=/tmp/jaxcache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 \
  JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
summarize() {  # profile, then summarize_jax_profile.py's other arguments
  [ -x "$BUILD/bin/deepcontext" ] && [ -f "$1" ] || return 0
  local json=${1%.dctx}.json profile=$1; shift
  "$BUILD/bin/deepcontext" export --format json "$profile" -o "$json" >> "$LOG" 2>&1 &&
    python3 $P/summarize_jax_profile.py "$json" "$@" >> "$LOG" 2>&1
}
run "gpu_jax" $DC "$OUT/dc_gpu_jax.dctx" python3 tests/gpu/programs/gpu_jax.py
summarize "$OUT/dc_gpu_jax.dctx" --jitted layer,loss --loop main
[ -f "$OUT/dc_gpu_jax.json" ] && python3 $P/check_jax_profile.py "$OUT/dc_gpu_jax.json" >> "$LOG" 2>&1
for model in ${MODELS:-mlp attention}; do
  run "$model deepcontext" DEEPCONTEXT_XLA_STATS=1 $DC "$OUT/dc_$model.dctx" python3 $W --model $model
  run "$model plain + jax.profiler" python3 $W --model $model --jax-profiler "$OUT/jp_$model.json"
  summarize "$OUT/dc_$model.dctx"
done
NOCB=XLA_FLAGS=--xla_gpu_enable_command_buffer=
for model in ${MODELS:-mlp attention}; do
  run "$model deepcontext without command buffers" $NOCB $DC "$OUT/dc_nocb_$model.dctx" \
    python3 $W --model $model
  run "$model jax.profiler without command buffers" $NOCB \
    python3 $W --model $model --jax-profiler "$OUT/jp_nocb_$model.json"
  # jax.profiler against itself in another process: the kernels' own spread.
  run "$model jax.profiler without command buffers, again" $NOCB \
    python3 $W --model $model --jax-profiler "$OUT/jp_nocb2_$model.json"
  summarize "$OUT/dc_nocb_$model.dctx" "$OUT/jp_nocb_$model.json" \
    --again "$OUT/jp_nocb2_$model.json"
done
# Profile size against step count: 10x the steps, same size.
for steps in 20 200; do
  run "mlp deepcontext, $steps steps" $DC "$OUT/dc_mlp_$steps.dctx" python3 $W --model mlp \
    --steps $steps
  echo "profile_bytes steps=$steps $(stat -c %s "$OUT/dc_mlp_$steps.dctx" 2>/dev/null)" >> "$LOG"
done
ls -la "$OUT" >> "$LOG" 2>&1
