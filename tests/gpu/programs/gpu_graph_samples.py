"""A CUDA graph captured from two Python lines, each running its own kernel,
then replayed from a third: under --gpu-samples the samples of each kernel
must land on its capture line, as its GPU time does. A third kernel name is
captured on two lines (the same elementwise add), so its samples cannot be
placed and stay under the replay line."""

import sys

import torch

replays = int(sys.argv[1]) if len(sys.argv) > 1 else 200
device = torch.device("cuda")
x = torch.randn(2048, 2048, device=device)
w = torch.randn(2048, 2048, device=device)
graph = torch.cuda.CUDAGraph()
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):  # warm-up outside the graph (cuBLAS handles, workspaces)
    y = x @ w
    z = torch.sin(y) + y
    z = z + y
torch.cuda.current_stream().wait_stream(stream)
with torch.cuda.graph(graph):
    y = x @ w  # MATMUL_LINE
    z = torch.sin(y)  # SIN_LINE
    z = z + y  # ADD_LINE_1
    z = z + x  # ADD_LINE_2
for _ in range(replays):
    graph.replay()  # REPLAY_LINE
torch.cuda.synchronize()
print("graph samples done")
