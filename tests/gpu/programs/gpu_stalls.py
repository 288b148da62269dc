"""Two Triton kernels with opposite bottlenecks, for instruction sampling
(deepcontext run --gpu-samples): copy_kernel streams memory (its warps
should stall on long_scoreboard), fma_kernel runs long chains of
multiply-adds on data in registers (math_pipe_throttle / wait). Prints the
time of its timed loop as `loop_s=<seconds>` so that runs with and
without the profiler can be compared.

Usage: gpu_stalls.py [ITERATIONS]"""

import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(src + offsets, mask=mask)  # MEMORY_LOAD_LINE
    tl.store(dst + offsets, x * 2.0 + 1.0, mask=mask)


@triton.jit
def fma_kernel(src, dst, n, ITERATIONS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(src + offsets, mask=mask)
    b = a * 0.5 + 1.0
    c = a * 0.25 + 2.0
    d = a * 0.125 + 3.0
    for _ in range(ITERATIONS):
        a = a * 0.9999 + 0.0001  # COMPUTE_LINE
        b = b * 0.9998 + 0.0002
        c = c * 0.9997 + 0.0003
        d = d * 0.9996 + 0.0004
    tl.store(dst + offsets, a + b + c + d, mask=mask)


def run_copy(src, dst):
    grid = (triton.cdiv(src.numel(), 1024),)
    copy_kernel[grid](src, dst, src.numel(), BLOCK=1024)  # COPY_LAUNCH_LINE


def run_fma(src, dst):
    grid = (triton.cdiv(src.numel(), 256),)
    fma_kernel[grid](src, dst, src.numel(), ITERATIONS=4096, BLOCK=256)  # FMA_LAUNCH_LINE


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    big = torch.randn(64 << 20, device="cuda")  # 256 MiB: streamed, never cached
    big_out = torch.empty_like(big)
    small = torch.randn(1 << 20, device="cuda")  # 4 MiB: stays in registers
    small_out = torch.empty_like(small)
    run_copy(big, big_out)  # compiles both kernels before the timed loop
    run_fma(small, small_out)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iterations):
        run_copy(big, big_out)
        run_fma(small, small_out)
    torch.cuda.synchronize()
    print("loop_s=%.4f" % (time.perf_counter() - start))
    assert torch.allclose(big_out[:16], big[:16] * 2.0 + 1.0)


if __name__ == "__main__":
    main()
