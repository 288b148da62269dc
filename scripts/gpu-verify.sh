#!/bin/bash
# One call on the GPU machine that checks attribution and measures overhead
# on the current tree (about 8 minutes on an H200): builds the CLI, runtime,
# Python package, reader and torch adapter from .deps/; runs the PyTorch,
# torch.compile (both modes), JAX and CUDA-graph-sample GPU tests in
# parallel, with a ResNet-50 `--native` run printing DEEPCONTEXT_NATIVE_STATS;
# then, on an otherwise idle machine, tests/gpu/jax_probe/measure_on_gpu.sh
# (JAX overhead against jax.profiler, placement, per-operation time, profile
# size) and the overhead table (bench/gpu_overhead.py --table).
# Work files go to $W (default /tmp/gpu-verify); tar it into $OUT to keep it:
#   W=/tmp/v bash scripts/gpu-verify.sh | tee $OUT/verify.log; tar czf $OUT/v.tgz -C /tmp v
set -uo pipefail
W=${W:-/tmp/gpu-verify}; mkdir -p "$W"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
BUILD=$PWD/build-gpu
source scripts/gpu-machine-deps.sh
{ nvidia-smi -L
  gpu_machine_configure "$BUILD" "$(command -v python3)" -DCMAKE_BUILD_TYPE=RelWithDebInfo | tail -2
  cmake --build "$BUILD" -j16 --target deepcontext deepcontext_cli deepcontext_python \
    deepcontext_reader deepcontext_torch_adapter_source | tail -2; } > "$W/build.txt" 2>&1
el "build: $(tail -1 $W/build.txt)"
export PYTHONUNBUFFERED=1
# 1. Correctness, in parallel.
export DEEPCONTEXT_BUILD=$BUILD DEEPCONTEXT_TEST_PYTHON=python3
t() { ( cd tests/gpu && timeout 130 python3 -m pytest -q -rs -s -p no:cacheprovider "$1" > "$W/t_$2.txt" 2>&1 ) ; }
t test_torch_compile.py compile & t test_gpu_attribution.py attr & t test_jax_attribution.py jax &
t test_gpu_graph_samples.py graph_samples &
( DEEPCONTEXT_NATIVE_STATS=1 timeout 120 "$BUILD/bin/deepcontext" run --native -o "$W/resnet_native.dctx" -- \
    python3 bench/workloads/gpu_models.py --model resnet50 --steps 30 > "$W/native_stats.txt" 2>&1 ) &
wait
el "tests"
for f in compile attr jax graph_samples; do echo "== $f"; grep -i "passed\|failed\|error\| %\|^E " "$W/t_$f.txt" | tail -20; done
echo "== native stats (ResNet-50 --native, alongside the tests)"; grep -v "^W0000" "$W/native_stats.txt" | tail -4
# 2. JAX timing, placement, per-op, profile size.
OUT=$W/jax PROBE=0 BUILD=$BUILD timeout 140 bash tests/gpu/jax_probe/measure_on_gpu.sh > /dev/null 2>&1
el "jax"; grep -v "^\s*$" "$W/jax/log.txt" | grep -v "^W0000\|^I0000\|^\[\|^--\|^-- " | tail -120
# 3. Overhead (machine otherwise idle).
timeout 230 python3 bench/gpu_overhead.py --build "$BUILD" --python python3 --table \
  --models resnet50,mlp,launch-torch,launch-triton --columns "run,--native,Proton" --steps 20 \
  --warmup 3 --blocks 3 --repeats 1 --cell-timeout 100 > "$W/table.txt" 2>&1
el "table"; grep -v "^W0000" "$W/table.txt"
