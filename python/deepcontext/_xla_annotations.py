"""Names the runtime as the process's NVTX tool so that XLA's kernels get
their HLO operation.

XLA GPU names each executable run, HLO instruction and compilation in NVTX
ranges once an NVTX tool is attached (NVTX_INJECTION64_PATH, read at the
process's first NVTX call). The runtime library is that tool
(runtime/cupti/nvtx_callbacks.cc, runtime/xla/): each XLA kernel, copy and
memset then sits below [forward]/[backward], its JAX scopes and primitive,
and its HLO instruction, under the Python line that ran the jitted
function. XLA's flags and command buffers stay as they are.
DEEPCONTEXT_XLA_NVTX=cupti names the CUPTI library instead (its NVTX
callbacks; each range then costs more).

Left alone: a tool the user named already (Nsight Systems sets the
variable), DEEPCONTEXT_XLA_OPS=0, and runs where no CUPTI file is known (no
GPU backend to receive the ranges)."""

import os

VARIABLE = "NVTX_INJECTION64_PATH"


def route_nvtx(runtime_path, cupti_path):
    """Names the runtime library (or, with DEEPCONTEXT_XLA_NVTX=cupti,
    `cupti_path`) as the NVTX tool unless the variable is set or
    DEEPCONTEXT_XLA_OPS=0; returns the path set, or None."""
    if os.environ.get("DEEPCONTEXT_XLA_OPS", "1") == "0":
        return None
    if os.environ.get(VARIABLE) or not cupti_path:
        return None
    tool = cupti_path if os.environ.get("DEEPCONTEXT_XLA_NVTX") == "cupti" else runtime_path
    os.environ[VARIABLE] = tool
    return tool
