"""Trains a small model compiled with torch.compile (Inductor): forward and
backward run Triton kernels Inductor generated and cuBLAS GEMMs. The first
step compiles (Dynamo, Inductor, Triton) and autotunes.

usage: gpu_compile.py [STEPS]"""

import sys

import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(256, 1024)
        self.down = torch.nn.Linear(1024, 256)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(x))
        h = torch.nn.functional.layer_norm(h, (1024,))
        return torch.softmax(self.down(h) + x, dim=-1)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    torch.manual_seed(0)
    model = Block().cuda()
    compiled = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2048, 256, device="cuda")
    for _ in range(steps):
        out = compiled(x)  # MARK_COMPILED_CALL
        loss = out.square().mean()  # MARK_LOSS
        loss.backward()  # MARK_BACKWARD
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print("steps=%d" % steps)
    print("compile done", flush=True)


if __name__ == "__main__":
    main()
