#!/bin/bash
# Records the JAX fixtures on a GPU machine: builds record_probe.so against
# the CUPTI of the JAX wheels, runs probe_programs.py with and without XLA's
# command buffers, then jax.profiler's reference numbers. Writes into $1.
set -u
OUTDIR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
CUPTI=$($PY - <<'PY'
import glob, os, site
for s in site.getsitepackages():
    for p in sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib", "libcupti.so.*"))):
        print(p); raise SystemExit
print("/usr/local/cuda/lib64/libcupti.so")
PY
)
echo "cupti: $CUPTI"
CUDA=${CUDA_HOME:-/usr/local/cuda}
g++ -std=c++17 -O1 -shared -fPIC -o /tmp/record_probe.so "$HERE/record_probe.cc" \
  -I"$CUDA/include" -I"$CUDA/targets/x86_64-linux/include" "$CUPTI" \
  -L"$CUDA/lib64/stubs" -L"$CUDA/targets/x86_64-linux/lib/stubs" -lcuda -Wl,-rpath,"$(dirname "$CUPTI")" || exit 1
export PYTHONUNBUFFERED=1
cd "$OUTDIR"
NVTX_INJECTION64_PATH=$CUPTI LD_PRELOAD=/tmp/record_probe.so PROBE_OUT=$OUTDIR/ev_graph PROBE_TAG=graph \
  timeout 75 $PY "$HERE/probe_programs.py" record "$OUTDIR"; echo "rc graph $?"
cp hlo_train_step.txt hlo_train_step_graph.txt 2>/dev/null
NVTX_INJECTION64_PATH=$CUPTI LD_PRELOAD=/tmp/record_probe.so PROBE_OUT=$OUTDIR/ev_nograph PROBE_TAG=nograph \
  XLA_FLAGS=--xla_gpu_enable_command_buffer= \
  timeout 75 $PY "$HERE/probe_programs.py" record "$OUTDIR"; echo "rc nograph $?"
timeout 90 $PY "$HERE/probe_programs.py" reference "$OUTDIR"; echo "rc reference $?"
rm -rf "$OUTDIR/trace" hlo_train_step.txt
gzip -9 "$OUTDIR"/ev_*.jsonl
ls -la "$OUTDIR"
