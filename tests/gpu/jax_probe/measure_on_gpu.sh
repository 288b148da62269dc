#!/bin/bash
# On the GPU machine, in one go: builds only the runtime library (the CLI is
# left out: profiles come back and are read where the CLI is built), records
# the large MLP's command buffer and a nested jit's HLO while it builds, then
# times the JAX MLP and attention steps (bench/workloads/jax_models.py):
# plain and jax.profiler (one process), under the runtime with XLA's ranges
# from its own NVTX tool (DEEPCONTEXT_XLA_STATS=1: where their cost goes),
# from CUPTI's NVTX callbacks, and without ranges (DEEPCONTEXT_XLA_OPS=0).
# Runs after the first share JAX's persistent compilation cache (their
# steps are the same; their profiles have no [compile] phase and no source
# lines). Writes into $OUT.
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
  python3 $P/trim_fixture.py /tmp/probe/ev_large.*.jsonl /tmp/probe/large.jsonl &&
    gzip -9c /tmp/probe/large.jsonl > "$OUT/train_step_large_graphs.jsonl.gz"
  timeout 60 python3 $P/probe_programs.py nested "$OUT"
}
probe > "$OUT/probe.txt" 2>&1 &
PROBE=$!
{ gpu_machine_configure "$BUILD" "$(command -v python3)" -DCMAKE_BUILD_TYPE=RelWithDebInfo | tail -2
  cmake --build "$BUILD" -j16 --target deepcontext deepcontext_python | tail -3; } > "$LOG" 2>&1
wait $PROBE
W=bench/workloads/jax_models.py
run() {  # label, then env assignments and the command
  local label=$1; shift
  echo "== $label" >> "$LOG"
  timeout 90 env "$@" 2>&1 | grep -v "^W0000\|^I0000\|^E0000" | tail -4 >> "$LOG"
}
DC="$P/dc_run.sh $BUILD"
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
run "gpu_jax own tool (no cache)" $DC "$OUT/dc_gpu_jax.dctx" python3 tests/gpu/programs/gpu_jax.py
export JAX_COMPILATION_CACHE_DIR=/tmp/jaxcache
for model in ${MODELS:-mlp attention}; do
  run "$model plain + jax.profiler" python3 $W --model $model --jax-profiler /tmp/jp_$model.json
  run "$model own tool" DEEPCONTEXT_XLA_STATS=1 $DC "$OUT/dc_$model.dctx" python3 $W --model $model
  run "$model XLA_OPS=0" DEEPCONTEXT_XLA_OPS=0 $DC /tmp/dc0_$model.dctx python3 $W --model $model
  run "$model cupti callbacks" DEEPCONTEXT_XLA_NVTX=cupti DEEPCONTEXT_XLA_STATS=1 $DC \
    /tmp/dcc_$model.dctx python3 $W --model $model
done
run "attention own tool, no command buffers" XLA_FLAGS=--xla_gpu_enable_command_buffer= \
  DEEPCONTEXT_XLA_STATS=1 $DC /tmp/dcn_attention.dctx python3 $W --model attention
ls -la "$OUT" /tmp/*.dctx >> "$LOG" 2>&1
