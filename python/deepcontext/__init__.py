"""DeepContext: a calling-context profiler for deep-learning programs.

Profile a region of a program::

    import deepcontext
    with deepcontext.profile("out.dctx"):
        train_one_epoch()

or a whole program from the shell: ``deepcontext run -o out.dctx -- python3 train.py``
(``python3 -m deepcontext run ...`` does the same). Read a profile with
``deepcontext report out.dctx``.
"""

import contextlib
import os
import sys

__all__ = ["profile", "__version__"]
__version__ = "0.1.0"


@contextlib.contextmanager
def profile(path="deepcontext.dctx"):
    """Profiles the enclosed block and writes the profile to `path`.

    The profile is written when the block ends, also when it raises. Inside a
    program already run by `deepcontext run`, the block's samples are part of
    that program's profile and `path` receives a copy covering the program so
    far.
    """
    from . import _frameworks, _runtime, _torch_adapter

    path = os.fspath(path)
    nested = _runtime.is_active()
    if not nested:
        _runtime.start()
        _runtime.reset()
        _runtime.set_metadata("python_version", sys.version.split()[0])
        _runtime.set_metadata("python_executable", sys.executable)
        _frameworks.attach()
        _torch_adapter.enable(True)
    try:
        yield
    finally:
        if not nested:
            _torch_adapter.enable(False)
            _runtime.stop()
        _runtime.write(path)
