"""record_function scopes that end on another thread than the one that
started them, as async scopes can, while a scope on the ending thread
stays open. Each moved scope's object is freed before the next is made,
so the next one is likely to take its address."""

import queue
import threading

import torch

enter = torch.ops.profiler._record_function_enter_new
leave = torch.ops.profiler._record_function_exit


class Worker(threading.Thread):
    """Runs the calls it is given, one at a time, on a thread of its own."""

    def __init__(self):
        super().__init__(name="scope-worker", daemon=True)
        self.calls = queue.Queue()
        self.start()

    def run(self):
        while True:
            call, done = self.calls.get()
            done.put(call())

    def __call__(self, call):
        done = queue.Queue()
        self.calls.put((call, done))
        return done.get()


worker = Worker()
x = torch.randn(8)
ITERATIONS = 40
for _ in range(ITERATIONS):
    moved_out = worker(lambda: enter("moved_out", None))
    kept = worker(lambda: enter("kept_scope", None))
    worker(lambda: torch.relu(x))
    leave(moved_out)          # started on the worker, ends here
    del moved_out
    moved_in = enter("moved_in", None)
    worker(lambda: leave(moved_in))  # started here, ends on the worker
    del moved_in
    worker(lambda: torch.sigmoid(x))
    worker(lambda: leave(kept))
    del kept

# A scope this thread started and another ended: the ops this thread runs
# next are no longer inside it.
ended_elsewhere = enter("ended_elsewhere", None)
worker(lambda: leave(ended_elsewhere))
del ended_elsewhere
for _ in range(5):
    torch.tanh(x)
print("scopes across threads done")
