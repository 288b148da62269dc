"""Bad twin of fwd_bwd_imbalance: a dense embedding gradient over a large
table, so each backward writes the whole table while the forward reads a
few rows."""
import torch


def main():
    torch.manual_seed(0)
    table = torch.nn.Embedding(200000, 64)
    ids = torch.randint(0, 200000, (256,))
    for _ in range(30):
        loss = table(ids).sum()
        loss.backward()
        table.weight.grad = None
    print(float(loss))


main()
