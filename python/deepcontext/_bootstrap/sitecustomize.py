"""Started by `deepcontext run` (via PYTHONPATH) at interpreter start-up.

Starts profiling this process, then hands over to the sitecustomize module
that would have run without us, if there is one.
"""

import importlib
import os
import sys


def _start_profiling():
    if not os.environ.get("DEEPCONTEXT_OUTPUT"):
        return
    try:
        from deepcontext import _launch
    except Exception as error:  # never break the user's interpreter
        sys.stderr.write("deepcontext: warning: profiling disabled: %s\n" % error)
        return
    _launch.main()


def _chain_to_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = list(sys.path)
    ours = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved_path
        if ours is not None and "sitecustomize" not in sys.modules:
            sys.modules["sitecustomize"] = ours


_start_profiling()
_chain_to_next_sitecustomize()
