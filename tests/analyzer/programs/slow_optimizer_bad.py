"""Bad twin of slow_optimizer: Adam's per-parameter for-loop over many small
parameters."""
import torch


def main():
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(64)) for _ in range(200)]
    opt = torch.optim.Adam(params, lr=1e-3, foreach=False)
    for p in params:
        p.grad = torch.ones_like(p)
    for _ in range(40):
        opt.step()
    print(float(params[0].sum()))


main()
