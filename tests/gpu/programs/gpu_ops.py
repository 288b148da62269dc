"""Kernels, copies, a memset and a synchronization from known Python lines,
then a CUDA graph captured at one line and replayed at another."""

import torch

device = torch.device("cuda")
host = torch.randn(256, 256)
a = host.to(device)  # COPY_LINE
b = torch.randn(256, 256, device=device)
for _ in range(5):
    c = torch.mm(a, b)  # MM_LINE
c.zero_()  # ZERO_LINE
torch.cuda.synchronize()  # SYNC_LINE

static_in = torch.randn(64, 64, device=device)
graph = torch.cuda.CUDAGraph()
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):
    torch.tanh(static_in)  # warm-up outside the graph
torch.cuda.current_stream().wait_stream(stream)
with torch.cuda.graph(graph):
    static_out = torch.tanh(static_in @ static_in)  # CAPTURE_LINE
for _ in range(3):
    graph.replay()  # REPLAY_LINE
torch.cuda.synchronize()
print("gpu ops done")
