#!/bin/bash
# On the GPU machine: records what CUPTI shows of XLA's traced command-buffer
# commands (stream-captured cuBLAS GEMMs in child graphs) for
# tests/gpu/programs/gpu_jax.py (`loss`: a nested jit whose whole step is one
# command buffer) and the attention training step of
# bench/workloads/jax_models.py, as fixtures (record_probe.so, trimmed,
# gzipped); then profiles both models with XLA's command buffers off under
# the runtime and under jax.profiler, for the per-operation comparison
# (summarize_jax_profile.py). Writes into $OUT: log.txt, build.txt,
# fixtures.tar (the recordings) and profiles.tar.
set -uo pipefail
OUT=${OUT:-$PWD/jax-record-out}
mkdir -p "$OUT" /tmp/probe
BUILD=${BUILD:-$PWD/build-gpu}
P=tests/gpu/jax_probe
W=bench/workloads/jax_models.py
LOG=$OUT/log.txt
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> "$LOG"; }
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
source scripts/gpu-machine-deps.sh
{ gpu_machine_configure "$BUILD" "$(command -v python3)" -DCMAKE_BUILD_TYPE=RelWithDebInfo | tail -2
  cmake --build "$BUILD" -j14 --target deepcontext deepcontext_python | tail -2; } > "$OUT/build.txt" 2>&1 &
BUILD_PID=$!
CUPTI=$(python3 - <<'PY'
import glob, os, site
for s in site.getsitepackages():
    for p in sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib", "libcupti.so.*"))):
        print(p); raise SystemExit
print("/usr/local/cuda/lib64/libcupti.so")
PY
)
CUDA=${CUDA_HOME:-/usr/local/cuda}
g++ -std=c++17 -O1 -shared -fPIC -o /tmp/record_probe.so $P/record_probe.cc -I"$CUDA/include" \
  -I"$CUDA/targets/x86_64-linux/include" "$CUPTI" -L"$CUDA/lib64/stubs" \
  -L"$CUDA/targets/x86_64-linux/lib/stubs" -lcuda -Wl,-rpath,"$(dirname "$CUPTI")" >> "$LOG" 2>&1
el "probe built"
record() {  # name, then the command
  local name=$1; shift
  NVTX_INJECTION64_PATH=$CUPTI LD_PRELOAD=/tmp/record_probe.so PROBE_OUT=/tmp/probe/ev_$name \
    timeout 90 "$@" 2>&1 | grep -v "^W0000\|^I0000\|^E0000" | tail -2 >> "$LOG"
  local events
  events=$(ls -S /tmp/probe/ev_$name.*.jsonl | head -1)
  python3 $P/trim_fixture.py "$events" /tmp/probe/$name.jsonl &&
    gzip -9c /tmp/probe/$name.jsonl > "$OUT/$name.jsonl.gz"
  el "recorded $name: $(wc -l < /tmp/probe/$name.jsonl) events"
}
record nested_jit_loss python3 tests/gpu/programs/gpu_jax.py
record attention_step python3 $W --model attention --steps 2
wait $BUILD_PID
el "built: $(tail -1 "$OUT/build.txt")"
run() {  # label, then env assignments and the command
  local label=$1; shift
  echo "== $label" >> "$LOG"
  timeout 60 env "$@" 2>&1 | grep -v "^W0000\|^I0000\|^E0000" | tail -3 >> "$LOG"
  el "$label"
}
NOCB=XLA_FLAGS=--xla_gpu_enable_command_buffer=
for model in ${MODELS:-attention mlp}; do
  run "$model deepcontext, no command buffers" $NOCB $P/dc_run.sh "$BUILD" \
    "$OUT/dc_nocb_$model.dctx" python3 $W --model $model
  run "$model jax.profiler, no command buffers" $NOCB python3 $W --model $model \
    --jax-profiler "$OUT/jp_nocb_$model.json"
done
run "gpu_jax deepcontext" $P/dc_run.sh "$BUILD" "$OUT/dc_gpu_jax.dctx" python3 tests/gpu/programs/gpu_jax.py
ls -la "$OUT" >> "$LOG"
# Few files come back from the GPU machine: bundle the fixtures and the
# profiles.
(cd "$OUT" && tar -cf fixtures.tar ./*.jsonl.gz && rm -f ./*.jsonl.gz
 tar -cf profiles.tar ./*.dctx ./*.json && rm -f ./*.dctx ./*.json)
