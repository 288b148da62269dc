"""A CPU training loop made of many small ops (launch-bound on the CPU side).

Prints one line (timed_steps.py): `iterations=N loop_seconds=S ...` where S
times the loop only (not start-up), so overhead ratios compare like with
like.
--record-function-floor runs it under a RecordFunction callback that does
nothing (record_function_floor.py; needs the deepcontext package on
PYTHONPATH to build it): what PyTorch itself spends on observing each op.
"""

import argparse

import torch
import torch.nn as nn

from timed_steps import run_timed_steps


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

    def step():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()

    # One untimed step warms up allocators and lazy initialisation.
    run_timed_steps(step, args.iters, warmup=1, cpu_clock=args.cpu_clock)


if __name__ == "__main__":
    main()
