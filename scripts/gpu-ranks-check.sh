#!/bin/bash
# A data-parallel job on this machine's GPUs under `deepcontext run --
# torchrun`: the step time of every rank without and with the profiler (one
# run each, same settings), then the merge of the ranks' profiles and its
# imbalance section, which should name rank SLOW_RANK and its extra work at
# SLOW_RANK_LINE of bench/workloads/ddp_train.py. Ranks share one GPU
# through gloo where there are fewer GPUs than ranks.
#   scripts/gpu-ranks-check.sh BUILD [PYTHON]
# NPROC (2), MODEL (resnet50), STEPS (20), SLOW_MATMULS (200) and OUT
# (./gpu-ranks-out) can be set.
set -euo pipefail
BUILD=${1:?usage: $0 BUILD [PYTHON]}
PYTHON=${2:-$(command -v python3)}
OUT=${OUT:-$PWD/gpu-ranks-out}
NPROC=${NPROC:-2}
MODEL=${MODEL:-resnet50}
mkdir -p "$OUT"
rm -f "$OUT"/job*.dctx
job=(-m torch.distributed.run --nproc-per-node "$NPROC" "$(dirname "$0")/../bench/workloads/ddp_train.py"
     --model "$MODEL" --steps "${STEPS:-20}" --slow-rank 1 --slow-matmuls "${SLOW_MATMULS:-200}")

echo "== no profiler"
"$PYTHON" "${job[@]}" --master-port 29611 2>&1 | grep -E "^rank=" | sort | tee "$OUT/plain.txt"
echo "== deepcontext run"
"$BUILD/bin/deepcontext" run -o "$OUT/job.dctx" -- "$PYTHON" "${job[@]}" --master-port 29612 \
  2>"$OUT/run.stderr" | grep -E "^rank=" | sort | tee "$OUT/profiled.txt"
tail -1 "$OUT/run.stderr"
echo "== step time ratio per rank (profiled / plain)"
paste "$OUT/plain.txt" "$OUT/profiled.txt" | awk '{
  split($3, a, "="); split($6, b, "="); printf "%s %s plain %.2f ms profiled %.2f ms ratio %.3f\n", $1, $2, a[2], b[2], b[2] / a[2] }'
echo "== merge"
"$BUILD/bin/deepcontext" merge "$OUT"/job.rank*.dctx -o "$OUT/merged.dctx"
for metric in gpu_time wall_time; do
  "$BUILD/bin/deepcontext" report "$OUT/merged.dctx" --metric "$metric" --width 200 \
    | sed -n '/^Imbalance across/,/^$/p'
done
for rank_profile in "$OUT"/job.rank*.dctx; do
  echo "== $(basename "$rank_profile")"
  "$BUILD/bin/deepcontext" report "$rank_profile" --metric gpu_time --width 200 | head -12
done
