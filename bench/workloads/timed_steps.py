"""The timed loop of the CPU training workloads (small_ops_train.py,
small_resnet_train.py), and the one line they print, which the benchmarks
parse: `iterations=N loop_seconds=S step_median_ms=M step_mean_ms=A`, S
timing the loop only (not start-up or warm-up), so overhead ratios compare
like with like."""

import statistics
import time


def run_timed_steps(step, iters, warmup, cpu_clock=False):
    """Calls `step()` `warmup` times untimed (allocators, lazy
    initialisation), then `iters` times, each timed in wall time, or in
    process CPU time (all threads) with `cpu_clock`, and prints the line.
    Median and mean step: a mean far above the median means long one-off
    pauses (first-time costs of a profiler)."""
    clock = time.process_time if cpu_clock else time.perf_counter
    for _ in range(warmup):
        step()
    steps = []
    start = time.perf_counter()
    for _ in range(iters):
        step_start = clock()
        step()
        steps.append(clock() - step_start)
    elapsed = time.perf_counter() - start
    print("iterations=%d loop_seconds=%.6f step_median_ms=%.4f step_mean_ms=%.4f" % (
        iters, elapsed, 1000 * statistics.median(steps), 1000 * statistics.fmean(steps)))
