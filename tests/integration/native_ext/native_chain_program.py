"""Calls the native chain a() -> b() -> c() of the test extension; c() calls
back into Python, which runs a torch op.

Usage: native_chain_program.py EXTENSION [OUTPUT]  (OUTPUT: use the
deepcontext.profile(OUTPUT, native=True) API instead of `deepcontext run`).
"""

import contextlib
import ctypes
import sys

import torch

CALLBACK = ctypes.CFUNCTYPE(None)
x = torch.ones(64)


def on_c():
    torch.relu(x)  # RELU_LINE


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.native_chain_run.argtypes = [CALLBACK]
    lib.native_chain_run.restype = None
    callback = CALLBACK(on_c)
    for _ in range(3):
        with torch.profiler.record_function("native_chain"):
            lib.native_chain_run(callback)  # CHAIN_LINE
    torch.sigmoid(x)  # PLAIN_LINE


if __name__ == "__main__":
    if len(sys.argv) > 2:
        import deepcontext
        region = deepcontext.profile(sys.argv[2], native=True)
    else:
        region = contextlib.nullcontext()
    with region:
        main()
    print("native chain done")
