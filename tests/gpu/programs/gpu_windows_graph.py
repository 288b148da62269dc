"""A CUDA graph captured in one trace window and replayed in a later one,
with work between them that lets the pause detach CUPTI: the replays'
kernels must still go to the capture line. Run with windows of 200 ms and
pauses of at least 150 ms (--trace-fraction 0.4 --trace-window-ms 200)."""

import sys
import time

import deepcontext
import torch
from trace_window_waits import wait_until, window_opens

SHORTEST_PAUSE_S = 0.15


def inside_one_window(work):
    """Runs `work` from a window's start; True when it ended in the same
    window (it took less than a pause, and a window was still open)."""
    window_opens()
    start = time.monotonic()
    result = work()
    return deepcontext.is_tracing() and time.monotonic() - start < SHORTEST_PAUSE_S, result


static_in = torch.randn(64, 64, device="cuda")
other = torch.randn(64, 64, device="cuda")
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):
    torch.tanh(static_in @ static_in)  # warm-up outside the graph
torch.cuda.current_stream().wait_stream(stream)
torch.cuda.synchronize()


def capture():
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = torch.tanh(static_in @ static_in)  # CAPTURE_LINE
    torch.cuda.synchronize()
    return graph, out


# torch.cuda.graph collects garbage before capturing: if that made the
# capture leave its window, the graph's nodes were made untraced; try again.
for attempt in range(5):
    captured_in_window, (graph, static_out) = inside_one_window(capture)
    if captured_in_window:
        break

# The pause: CUDA calls in it let CUPTI detach at their exit.
wait_until(False)
wait_until(True, busy=lambda: torch.mm(other, other))  # PAUSE_LINE


def replay():
    for _ in range(3):
        graph.replay()  # REPLAY_LINE
    torch.cuda.synchronize()


replayed_in_window, _ = inside_one_window(replay)

expected = torch.tanh(static_in @ static_in)
assert torch.allclose(static_out, expected, atol=1e-3), "graph replay went wrong"
print("graph windows done captured_in_window=%d replayed_in_window=%d"
      % (captured_in_window, replayed_in_window))
sys.stdout.flush()
