"""A CUDA graph captured in one trace window and replayed in a later one,
with work between them that lets the pause detach CUPTI: the replays'
kernels must still go to the capture line."""

import sys
import time

import deepcontext
import torch


def wait_until(tracing, busy=None, timeout=20.0):
    deadline = time.monotonic() + timeout
    while deepcontext.is_tracing() != tracing:
        if time.monotonic() > deadline:
            sys.exit("no window %s within %.0f s" % ("opened" if tracing else "closed", timeout))
        if busy is not None:
            busy()
        time.sleep(0.0005)


def window_opens():
    """Returns as a window opens, so that the work after it has the whole
    window."""
    wait_until(False)
    wait_until(True)


static_in = torch.randn(64, 64, device="cuda")
other = torch.randn(64, 64, device="cuda")
graph = torch.cuda.CUDAGraph()
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):
    torch.tanh(static_in @ static_in)  # warm-up outside the graph
torch.cuda.current_stream().wait_stream(stream)
torch.cuda.synchronize()

window_opens()
with torch.cuda.graph(graph):
    static_out = torch.tanh(static_in @ static_in)  # CAPTURE_LINE
captured_in_window = deepcontext.is_tracing()
torch.cuda.synchronize()

# The pause: CUDA calls in it let CUPTI detach at their exit.
wait_until(False)
wait_until(True, busy=lambda: torch.mm(other, other))  # PAUSE_LINE
torch.cuda.synchronize()
window_opens()
for _ in range(3):
    graph.replay()  # REPLAY_LINE
torch.cuda.synchronize()
replayed_in_window = deepcontext.is_tracing()

expected = torch.tanh(static_in @ static_in)
assert torch.allclose(static_out, expected, atol=1e-3), "graph replay went wrong"
print("graph windows done captured_in_window=%d replayed_in_window=%d"
      % (captured_in_window, replayed_in_window))
sys.stdout.flush()
