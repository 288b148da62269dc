"""Waiting for trace windows to open or close, for GPU test programs run
with --trace-fraction (deepcontext.is_tracing() says whether one is open)."""

import sys
import time

import deepcontext


def wait_until(tracing, busy=None, timeout=30.0):
    """Returns once a window is open (`tracing`) or closed (not), calling
    `busy` meanwhile if given; exits the program after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while deepcontext.is_tracing() != tracing:
        if time.monotonic() > deadline:
            sys.exit("no window %s within %.0f s" % ("opened" if tracing else "closed", timeout))
        if busy is not None:
            busy()
        time.sleep(0.0005)


def window_opens(timeout=30.0):
    """Returns as a window opens, so that the work after it has the whole
    window."""
    wait_until(False, timeout=timeout)
    wait_until(True, timeout=timeout)
