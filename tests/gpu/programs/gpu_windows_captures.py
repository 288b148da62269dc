"""CUDA graphs captured over and over for about two seconds while trace
windows open and close (and CUPTI detaches and attaches again) around them:
every capture must stay valid and every replay right. torch captures in the
default (global) mode, where a context synchronization on another thread
would invalidate the capture."""

import sys
import time

import torch

x = torch.randn(64, 64, device="cuda")
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):
    torch.tanh(x @ x)  # warm-up outside any graph
torch.cuda.current_stream().wait_stream(stream)
torch.cuda.synchronize()
expected = torch.tanh(x @ x)

captures = 0
deadline = time.monotonic() + 2.0
while time.monotonic() < deadline:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        graph.capture_begin()
        out = torch.tanh(x @ x)  # CAPTURE_LINE
        graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.allclose(out, expected, atol=1e-3), "replay %d went wrong" % captures
    captures += 1
print("captures done captures=%d" % captures)
sys.stdout.flush()
