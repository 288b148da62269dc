"""The floor of any RecordFunction-based profiler: a callback that does nothing.

    floor = RecordFunctionFloor(torch)   # builds record_function_floor.cc
    with floor.enabled():
        ...                              # every op is observed, nothing is done
    with floor.enabled(ids=True):
        ...                              # the same, with RecordFunction's ids
    floor.enable()                       # or: from here on

Built with the compiler command of deepcontext's own PyTorch adapter, so it
sees the same torch headers and ABI, and cached beside it
(deepcontext._torch_adapter.cached_build).
"""

import contextlib
import ctypes
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class RecordFunctionFloor:
    def __init__(self, torch):
        from deepcontext import _torch_adapter
        libraries = [_torch_adapter._mapped_library("libtorch_cpu.so"),
                     _torch_adapter._mapped_library("libc10.so")]
        if not all(libraries):
            raise RuntimeError("libtorch_cpu.so / libc10.so are not loaded")
        output = _torch_adapter.cached_build(
            torch, os.path.join(HERE, "record_function_floor.cc"), "record-function-floor",
            _torch_adapter._include_dirs(torch), libraries)
        self._library = ctypes.CDLL(output, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self._library.floor_enable.argtypes = [ctypes.c_int, ctypes.c_int]
        if self._library.floor_install() != 0:
            raise RuntimeError("torch refused the floor callback")

    def enable(self, ids=False):
        self._library.floor_enable(1, int(ids))

    @contextlib.contextmanager
    def enabled(self, ids=False):
        self.enable(ids)
        try:
            yield
        finally:
            self._library.floor_enable(0, int(ids))
