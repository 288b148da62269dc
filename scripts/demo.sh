#!/bin/sh
# Profiles examples/train_cnn.py and prints the report (`make demo`).
set -eu
BUILD=${1:-build}
PYTHON=${2:-/usr/bin/python3}
OUT=${DEMO_OUTPUT:-$BUILD/demo/train_cnn.dctx}
mkdir -p "$(dirname "$OUT")"
DEVICE=cpu
if "$PYTHON" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  DEVICE=cuda
fi
"$BUILD/bin/deepcontext" run -o "$OUT" -- "$PYTHON" examples/train_cnn.py --steps 20 --device "$DEVICE"
"$BUILD/bin/deepcontext" report "$OUT" --depth 14 --min-percent 2
"$BUILD/bin/deepcontext" analyze "$OUT" --top 5
