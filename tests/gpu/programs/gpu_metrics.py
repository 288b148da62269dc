"""Three kernels with different bottlenecks, for hardware counters per
kernel (deepcontext run --gpu-metrics): gpu_stalls.py's copy_kernel
(streams memory: DRAM throughput near peak) and fma_kernel (register-only
multiply-adds: SM throughput near peak, DRAM idle), and a half-precision
matrix product (cuBLAS: the tensor pipe busy). Prints the time of its timed
loop as `loop_s=<seconds>`.

Usage: gpu_metrics.py [ITERATIONS]"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_stalls import run_copy, run_fma  # noqa: E402


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    big = torch.randn(64 << 20, device="cuda")
    big_out = torch.empty_like(big)
    small = torch.randn(1 << 20, device="cuda")
    small_out = torch.empty_like(small)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    run_copy(big, big_out)
    run_fma(small, small_out)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iterations):
        run_copy(big, big_out)
        run_fma(small, small_out)
        c = a @ b  # GEMM_LINE
    torch.cuda.synchronize()
    print("loop_s=%.4f" % (time.perf_counter() - start))
    assert torch.allclose(big_out[:16], big[:16] * 2.0 + 1.0)
    assert c.shape == (4096, 4096)


if __name__ == "__main__":
    main()
