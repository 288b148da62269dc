"""Fixed twin of slow_optimizer: the multi-tensor (foreach) Adam."""
import torch


def main():
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(64)) for _ in range(200)]
    opt = torch.optim.Adam(params, lr=1e-3, foreach=True)
    for p in params:
        p.grad = torch.ones_like(p)
    for _ in range(40):
        opt.step()
    print(float(params[0].sum()))


main()
