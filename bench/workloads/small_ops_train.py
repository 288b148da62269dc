"""A CPU training loop made of many small ops (launch-bound on the CPU side).

Prints one line: `iterations=N loop_seconds=S` where S times the loop only
(not start-up), so overhead ratios compare like with like.
--record-function-floor runs it under a RecordFunction callback that does
nothing (record_function_floor.py; needs the deepcontext package on
PYTHONPATH to build it): what PyTorch itself spends on observing each op.
"""

import argparse
import time

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--record-function-floor", action="store_true")
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
    for timed in (False, True):
        start = time.perf_counter()
        for _ in range(args.iters if timed else 1):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        elapsed = time.perf_counter() - start
    print("iterations=%d loop_seconds=%.6f" % (args.iters, elapsed))


if __name__ == "__main__":
    main()
