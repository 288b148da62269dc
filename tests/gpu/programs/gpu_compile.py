"""Trains a small model compiled with torch.compile (Inductor): forward and
backward run Triton kernels Inductor generated and cuBLAS GEMMs. The first
step compiles (Dynamo, Inductor, Triton) and autotunes. MODE is
torch.compile's mode: "reduce-overhead" records the compiled graphs as CUDA
graphs (cudagraph trees) and replays them from the later steps.

usage: gpu_compile.py [STEPS [MODE]]"""

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
    mode = sys.argv[2] if len(sys.argv) > 2 else None
    torch.manual_seed(0)
    model = Block().cuda()
    compiled = torch.compile(model, mode=mode)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2048, 256, device="cuda")
    for _ in range(steps):
        out = compiled(x)  # MARK_COMPILED_CALL
        loss = out.square().mean()  # MARK_LOSS
        loss.backward()  # MARK_BACKWARD
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print("steps=%d mode=%s" % (steps, mode or "default"))
    print("compile done", flush=True)


if __name__ == "__main__":
    main()
