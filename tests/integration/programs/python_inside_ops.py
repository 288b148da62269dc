"""Ops whose implementation runs Python again, and compilation work.

A torch.autograd.Function runs its forward and backward in Python from
inside the framework's op for the Function (as torch.compile's compiled
regions do). The compiler's frames are stand-ins at the paths of
torch.compile's own files (written to the directory given as argv[1]):
Dynamo's frame conversion, and Inductor's autotuner whose benchmark runs
through an exec()-generated launcher."""

import importlib.util
import os
import sys

import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.mul(3.0)  # MARK_FUNCTION_FORWARD

    @staticmethod
    def backward(ctx, grad):
        return grad.mul(3.0)  # MARK_FUNCTION_BACKWARD


CONVERT_FRAME = '''
def convert(x):
    return twice(x)


def twice(x):
    y = x.add(1.0)
    return y.sub(1.0)
'''

TRITON_HEURISTICS = '''
class CachingAutotuner:
    def __init__(self, launcher):
        self.launcher = launcher

    def run(self, x):
        self.autotune_to_one_config(x)
        return self.launcher(x)

    def autotune_to_one_config(self, x):
        for _ in range(2):
            self.launcher(x)
'''


def load(root, relative, source):
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_")[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generated_call(autotuner, x):
    return autotuner.run(x)  # MARK_GENERATED_CALL


def main():
    root = sys.argv[1]
    x = torch.ones(8, requires_grad=True)
    for _ in range(3):
        y = Scale.apply(x)  # MARK_APPLY
        y.sum().backward()

    convert_frame = load(root, "torch/_dynamo/convert_frame.py", CONVERT_FRAME)
    convert_frame.convert(x.detach())  # MARK_COMPILE

    scope = {}
    exec("def launcher(x):\n    return x.neg()\n", scope)
    # Other code made with exec() (or `python -c`) shares its file name.
    exec("def helper(x):\n    return x.abs()\n", scope)
    scope["helper"](x.detach())
    heuristics = load(root, "torch/_inductor/runtime/triton_heuristics.py", TRITON_HEURISTICS)
    autotuner = heuristics.CachingAutotuner(scope["launcher"])
    with torch.no_grad():
        for _ in range(4):
            generated_call(autotuner, x)
    print("python inside ops done")


if __name__ == "__main__":
    main()
