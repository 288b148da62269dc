"""A DataLoader with worker processes that run torch ops per sample."""

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, index):
        x = torch.full((16,), float(index))
        return torch.mul(x, x)  # WORKER_OP_LINE


def main():
    loader = DataLoader(Squares(), batch_size=4, num_workers=2)
    total = 0.0
    for batch in loader:
        total += float(torch.sum(batch))
    print("total %.1f" % total)


if __name__ == "__main__":
    main()
