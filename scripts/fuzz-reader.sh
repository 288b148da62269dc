#!/bin/sh
# Runs the reader's libFuzzer harness (format/dctx_fuzzer.cc) under ASan and
# UBSan for a bounded time, seeded with the hostile files the reader must
# refuse cheaply: a few KB decompressing to millions of empty strings, a
# valid file declaring 20k metrics over 20k nodes, a 2000-deep recursion and
# a small calling context tree. Part of `make test`.
#
#     scripts/fuzz-reader.sh <build dir> <seconds> <dir with large_profile>
set -eu

BUILD_DIR=$1
SECONDS_TO_RUN=$2
TOOLS_DIR=$3

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz-reader: clang++ not found (make deps installs it)" >&2
  exit 1
fi
# Only the harness is built with clang; the rest of the tree is untouched.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DDEEPCONTEXT_PYTHON=/usr/bin/python3 >/dev/null
cmake --build "$BUILD_DIR" --target dctx_fuzzer

SEEDS=$(mktemp -d)
CORPUS=$(mktemp -d)
trap 'rm -rf "$SEEDS" "$CORPUS"' EXIT
"$TOOLS_DIR/large_profile" strings 4000000 "$SEEDS/empty-strings.dctx" >/dev/null
"$TOOLS_DIR/large_profile" metrics 20000 "$SEEDS/many-metrics.dctx" >/dev/null
"$TOOLS_DIR/large_profile" recursion 2000 "$SEEDS/recursion.dctx" >/dev/null
"$TOOLS_DIR/large_profile" cct 3000 "$SEEDS/cct.dctx" >/dev/null

# -max_len covers the seeds (the 20k-metric file is about 200 KB); the RSS
# limit catches any allocation the file's size does not justify.
"$BUILD_DIR/bin/dctx_fuzzer" -max_total_time="$SECONDS_TO_RUN" \
  -max_len=300000 -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
  "$CORPUS" "$SEEDS"
