#!/bin/bash
# `deepcontext run -o OUT -- CMD...` for GPU-machine measurements that build
# only the runtime library (build/lib, build/python), not the CLI: the same
# environment ExecChild (tools/cli/run_command.cc) gives the program, with
# the defaults (no option). Usage: dc_run.sh BUILD OUT.dctx CMD...
B=$(cd "$1" && pwd); OUT_FILE=$2; shift 2
export PYTHONPATH="$B/python/deepcontext/_bootstrap:$B/python${PYTHONPATH:+:$PYTHONPATH}"
export DEEPCONTEXT_OUTPUT="$OUT_FILE" DEEPCONTEXT_HOME="$B" DEEPCONTEXT_ROOT_PID=$$
unset DEEPCONTEXT_NATIVE DEEPCONTEXT_CPU_TIME DEEPCONTEXT_GPU_MEMORY DEEPCONTEXT_CPU_COUNTERS \
  DEEPCONTEXT_GPU_SAMPLES DEEPCONTEXT_TRACE_FRACTION DEEPCONTEXT_TRACE_WINDOW_MS DEEPCONTEXT_RUN_SOCKET
exec "$@"
