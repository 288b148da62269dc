"""Runs ops from two Python threads besides the main thread."""

import threading

import torch


def worker_body(n):
    x = torch.randn(32, 32)
    for _ in range(n):
        x = torch.tanh(x @ x)  # WORKER_OP_LINE


threads = [threading.Thread(target=worker_body, args=(20,), name="w%d" % i) for i in range(2)]
for t in threads:
    t.start()
main_x = torch.sigmoid(torch.randn(16))  # MAIN_OP_LINE
for t in threads:
    t.join()
print("threads done")
