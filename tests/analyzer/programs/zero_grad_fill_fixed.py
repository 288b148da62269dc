"""Fixed twin of zero_grad_fill: gradients are dropped (set to None)."""
import torch


def main():
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(256, 256)) for _ in range(100)]
    opt = torch.optim.SGD(params, lr=1e-3)
    for _ in range(150):
        for p in params:
            p.grad = torch.ones_like(p) if p.grad is None else p.grad.add_(1)
        opt.zero_grad(set_to_none=True)
    print(float(params[0].sum()))


main()
