#!/bin/bash
# On the GPU machine (no network): builds what the analyzer's GPU twins need
# with the build dependencies from .deps/ (see README "GPU machine"), runs
# the twins, then profiles and analyzes the benchmark models (ResNet-50,
# GPT-2) as the no-false-alarm check. Results go to $OUT (default
# ./gpu-twins-out): twins.txt, gpu_twins.json, models.txt (+ <model>.json),
# build.txt, adapter.txt, runs.txt (one line per twin run).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-twins-out}
mkdir -p "$OUT"
BUILD=${BUILD:-$PWD/build-gpu}
source scripts/gpu-machine-deps.sh
{
  nvidia-smi -L
  gpu_machine_configure "$BUILD" "$(command -v python3)" | tail -3
  cmake --build "$BUILD" --target deepcontext deepcontext_cli deepcontext_python \
        deepcontext_torch_adapter_source | tail -3
  echo "built after ${SECONDS}s"
} > "$OUT/build.txt" 2>&1
export DEEPCONTEXT_BUILD=$BUILD DEEPCONTEXT_TEST_PYTHON=python3 PYTHONUNBUFFERED=1 \
       DEEPCONTEXT_CACHE_DIR=$BUILD/cache DEEPCONTEXT_ANALYZER_RESULTS=$OUT/gpu_twins.json \
       DEEPCONTEXT_TWIN_LOG=$OUT/runs.txt \
       DEEPCONTEXT_TWIN_REPEATS=${DEEPCONTEXT_TWIN_REPEATS:-1}
# The first profiled run builds the PyTorch adapter; the others reuse it.
{ time "$BUILD/bin/deepcontext" run -o /tmp/adapter.dctx -- \
    python3 -c "import torch; torch.zeros(1, device='cuda')"; } > "$OUT/adapter.txt" 2>&1
(cd tests/analyzer && timeout "${TWINS_TIMEOUT:-360}" \
   python3 -m pytest -q -rs -p no:cacheprovider test_gpu_twins.py) > "$OUT/twins.txt" 2>&1
echo "twins done after ${SECONDS}s" >> "$OUT/twins.txt"
for model in ${MODELS:-resnet50 gpt2}; do
  echo "== $model"
  timeout "${MODEL_TIMEOUT:-120}" "$BUILD/bin/deepcontext" run -o "/tmp/$model.dctx" -- \
    python3 bench/workloads/gpu_models.py --model "$model" --steps 30 2>&1 | tail -2
  "$BUILD/bin/deepcontext" analyze "/tmp/$model.dctx"
  "$BUILD/bin/deepcontext" analyze --format json "/tmp/$model.dctx" > "$OUT/$model.json"
done > "$OUT/models.txt" 2>&1
echo "models done after ${SECONDS}s" >> "$OUT/models.txt"
