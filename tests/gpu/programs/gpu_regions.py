"""Two deepcontext.profile() regions with unprofiled work between them. A
region's end detaches CUPTI and the next one attaches it again; a CUDA
graph captured in the first region is replayed between the regions and in
the second."""

import sys

import deepcontext
import torch

first, second = sys.argv[1], sys.argv[2]
device = torch.device("cuda")
a = torch.randn(256, 256, device=device)
static_in = torch.randn(64, 64, device=device)
torch.cuda.synchronize()

with deepcontext.profile(first, cpu_time=False):
    for _ in range(5):
        c = a @ a  # FIRST_LINE
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.tanh(static_in)  # warm-up outside the graph
    torch.cuda.current_stream().wait_stream(stream)
    with torch.cuda.graph(graph):
        static_out = torch.tanh(static_in @ static_in)  # CAPTURE_LINE
    graph.replay()
    # Launched last and left running: the region's end waits for it.
    for _ in range(20):
        c = a @ a  # TAIL_LINE

for _ in range(5):
    graph.replay()
    c = a @ a
torch.cuda.synchronize()

with deepcontext.profile(second, cpu_time=False):
    for _ in range(5):
        c = a @ a  # SECOND_LINE
    for _ in range(3):
        graph.replay()  # REPLAY_LINE
    torch.cuda.synchronize()
expected = torch.tanh(static_in @ static_in)
assert torch.allclose(static_out, expected, atol=1e-3), "graph replay went wrong"
print("regions done")
