"""Small products on one line for about 1.5 s (argv[1]: "region" runs them
inside deepcontext.profile(argv[2], trace_fraction=0.3)); prints how many
products ran."""

import sys
import time

import torch


def products(seconds):
    a = torch.randn(16, 16)
    count = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for _ in range(20):
            a = torch.mm(a, a).tanh()  # PRODUCT_LINE
        count += 20
    return count


if len(sys.argv) > 1 and sys.argv[1] == "region":
    import deepcontext
    with deepcontext.profile(sys.argv[2], trace_fraction=0.3, trace_window_ms=10):
        count = products(1.5)
else:
    count = products(1.5)
print("products=%d" % count)
