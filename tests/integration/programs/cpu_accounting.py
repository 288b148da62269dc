"""Measures, from inside, the thread CPU time spent in heavy ops, and writes
"<ns> <iterations>" to argv[1]. One intra-op thread, so op time is this
thread's time. It runs at least 40 iterations and at least one second of op
time, so that a sampled measurement (one tick per few milliseconds) has
enough ticks on a fast CPU too."""

import sys
import time

import torch

MIN_ITERATIONS = 40
MIN_SPENT_NS = 1_000_000_000

torch.set_num_threads(1)
a = torch.randn(384, 384)
spent = 0
iterations = 0
while iterations < MIN_ITERATIONS or spent < MIN_SPENT_NS:
    begin = time.thread_time_ns()
    b = torch.mm(a, a)
    c = torch.tanh(b)
    spent += time.thread_time_ns() - begin
    a = c
    iterations += 1
with open(sys.argv[1], "w") as f:
    f.write("%d %d" % (spent, iterations))
