"""The floor of any RecordFunction-based profiler: a callback that does nothing.

    floor = RecordFunctionFloor(torch)   # builds record_function_floor.cc
    with floor.enabled():
        ...                              # every op is observed, nothing is done
    floor.enable()                       # or: from here on

Built with the compiler command of deepcontext's own PyTorch adapter, so it
sees the same torch headers and ABI, and cached beside the adapter (per torch
version, library paths and source).
"""

import contextlib
import ctypes
import fcntl
import hashlib
import os
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


class RecordFunctionFloor:
    def __init__(self, torch):
        from deepcontext import _torch_adapter
        libraries = [_torch_adapter._mapped_library("libtorch_cpu.so"),
                     _torch_adapter._mapped_library("libc10.so")]
        if not all(libraries):
            raise RuntimeError("libtorch_cpu.so / libc10.so are not loaded")
        source = os.path.join(HERE, "record_function_floor.cc")
        digest = hashlib.sha256(repr(libraries).encode())
        with open(source, "rb") as f:
            digest.update(f.read())
        directory = os.path.join(_torch_adapter._cache_root(), "record-function-floor")
        os.makedirs(directory, exist_ok=True)
        output = os.path.join(directory, "torch-%s-%s.so" % (
            torch.__version__.replace("+", "_"), digest.hexdigest()[:16]))
        with open(output + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.isfile(output):
                fd, temporary = tempfile.mkstemp(suffix=".so", dir=directory)
                os.close(fd)
                try:
                    _torch_adapter._build(torch, source, temporary,
                                          _torch_adapter._include_dirs(torch), libraries)
                    os.replace(temporary, output)
                finally:
                    if os.path.exists(temporary):
                        os.unlink(temporary)
        self._library = ctypes.CDLL(output, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self._library.floor_enable.argtypes = [ctypes.c_int]
        if self._library.floor_install() != 0:
            raise RuntimeError("torch refused the floor callback")

    def enable(self):
        self._library.floor_enable(1)

    @contextlib.contextmanager
    def enabled(self):
        self.enable()
        try:
            yield
        finally:
            self._library.floor_enable(0)
