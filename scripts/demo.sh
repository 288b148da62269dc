#!/bin/sh
# Profiles examples/train_cnn.py and prints the report (`make demo`).
# Fails (exit 1, with the reason) when the profile lacks PyTorch's operator
# layer (`aten::` operators and the `[backward]` subtrees): a demo without
# them shows only Python lines, and a newcomer would not know anything was
# missing.
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

# The whole tree, names unshortened, for the check below.
FULL=$("$BUILD/bin/deepcontext" report "$OUT" --depth 0 --min-percent 0 --top 0 --width 0)
missing=""
case "$FULL" in *"aten::"*) ;; *) missing="aten:: operators" ;; esac
case "$FULL" in *"[backward]"*) ;; *) missing="${missing:+$missing and no }[backward] subtrees" ;; esac
if [ -n "$missing" ]; then
  echo "demo: FAILED: the profile $OUT has no $missing." >&2
  echo "demo: the PyTorch adapter did not load (see the warning at the start of the run);" >&2
  echo "demo: on Debian, \`make deps\` (or \`apt-get install libtorch-dev\`) installs the headers it needs." >&2
  exit 1
fi
echo "demo: profile $OUT has aten:: operators and [backward] subtrees"
