#!/bin/bash
# On the GPU machine: builds the runtime and CLI (deps from .deps/), then
# for the JAX MLP and attention steps of bench/workloads/jax_models.py:
# plain vs jax.profiler step times (one process), the same under
# `deepcontext run` with XLA's command buffers (default) and without, the
# profiles summarized (tests/gpu/jax_probe/summarize_jax_profile.py), and
# the JAX GPU test. Writes into $OUT.
set -uo pipefail
OUT=${OUT:-$PWD/jax-verify-out}
mkdir -p "$OUT"
BUILD=${BUILD:-$PWD/build-gpu}
source scripts/gpu-machine-deps.sh
{
  gpu_machine_configure "$BUILD" "$(command -v python3)" | tail -3
  cmake --build "$BUILD" -j16 --target deepcontext deepcontext_cli deepcontext_python | tail -3
} > "$OUT/build.txt" 2>&1
DC=$BUILD/bin/deepcontext
W=bench/workloads/jax_models.py
S=tests/gpu/jax_probe/summarize_jax_profile.py
export PYTHONUNBUFFERED=1
for model in ${MODELS:-mlp attention}; do
  {
    echo "== $model plain + jax.profiler (command buffers)"
    timeout 60 python3 $W --model $model --jax-profiler /tmp/jp_$model.json 2>&1 | grep -v "^W0000\|^I0000" | tail -3
    echo "== $model jax.profiler without command buffers"
    XLA_FLAGS=--xla_gpu_enable_command_buffer= timeout 60 python3 $W --model $model \
      --jax-profiler /tmp/jp_nocb_$model.json 2>&1 | tail -2
    echo "== $model deepcontext run (command buffers)"
    timeout 60 "$DC" run -o /tmp/dc_$model.dctx -- python3 $W --model $model 2>&1 | tail -3
    "$DC" export --format json /tmp/dc_$model.dctx > /tmp/dc_$model.json
    python3 $S /tmp/dc_$model.json /tmp/jp_nocb_$model.json
    echo "== $model deepcontext run without command buffers"
    XLA_FLAGS=--xla_gpu_enable_command_buffer= timeout 60 "$DC" run -o /tmp/dcn_$model.dctx -- \
      python3 $W --model $model 2>&1 | tail -2
    "$DC" export --format json /tmp/dcn_$model.dctx > /tmp/dcn_$model.json
    python3 $S /tmp/dcn_$model.json /tmp/jp_nocb_$model.json
    ls -la /tmp/dc_$model.dctx /tmp/dcn_$model.dctx
  } >> "$OUT/models.txt" 2>&1
  [ -x "$DC" ] || { echo "no deepcontext built: see build.txt" >> "$OUT/models.txt"; }
  if [ "$model" = mlp ]; then
    "$DC" report /tmp/dc_mlp.dctx 2>&1 | head -80 > "$OUT/report_mlp.txt"
    (cd tests/gpu && DEEPCONTEXT_BUILD=$BUILD DEEPCONTEXT_TEST_PYTHON=python3 timeout 90 \
       python3 -m pytest -q -rs -p no:cacheprovider test_jax_attribution.py) > "$OUT/gpu_test.txt" 2>&1
  fi
done
cp /tmp/dc_mlp.json "$OUT/dc_mlp_export.json" 2>/dev/null && gzip -9 "$OUT/dc_mlp_export.json"
