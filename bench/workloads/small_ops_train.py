"""A CPU training loop made of many small ops (launch-bound on the CPU side).

Prints one line: `iterations=N loop_seconds=S` where S times the loop only
(not start-up), so overhead ratios compare like with like.
--record-function-floor runs it under a RecordFunction callback that does
nothing (record_function_floor.py; needs the deepcontext package on
PYTHONPATH to build it): what PyTorch itself spends on observing each op.
"""

import argparse
import statistics
import time

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--record-function-floor", action="store_true")
    parser.add_argument("--cpu-clock", action="store_true",
                        help="time steps in process CPU time (all threads), which other "
                             "processes on a loaded machine do not inflate")
    args = parser.parse_args()
    if args.record_function_floor:
        from record_function_floor import RecordFunctionFloor
        RecordFunctionFloor(torch).enable()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.LayerNorm(args.width), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(args.width, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(16, args.width)
    y = torch.randn(16, 1)
    # One untimed step warms up allocators and lazy initialisation.
    clock = time.process_time if args.cpu_clock else time.perf_counter
    steps = []
    for timed in (False, True):
        start = time.perf_counter()
        for _ in range(args.iters if timed else 1):
            step_start = clock()
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            if timed:
                steps.append(clock() - step_start)
        elapsed = time.perf_counter() - start
    # Median and mean step: a mean far above the median means long one-off
    # pauses (first-time costs of a profiler).
    print("iterations=%d loop_seconds=%.6f step_median_ms=%.4f step_mean_ms=%.4f" % (
        args.iters, elapsed, 1000 * statistics.median(steps), 1000 * statistics.fmean(steps)))


if __name__ == "__main__":
    main()
