"""The floor of any CUPTI-based tracer of every kernel: CUPTI configured as
the runtime configures it, with callbacks that do nothing and activity
records thrown away (bench/cupti_floor.cc, built as lib/libdc_cupti_floor.so
beside the runtime).

    floor = CuptiFloor()
    with floor.enabled(callbacks=True):   # or callbacks=False: records only
        ...

It loads the same libcupti as deepcontext.profile() (the framework's own,
deepcontext._framework_cupti), so that both are timed with one library.
"""

import contextlib
import ctypes
import os

_ERRORS = {1: "CUPTI could not be loaded", 2: "CUPTI refused part of the setup",
           3: "already started"}


class CuptiFloor:
    def __init__(self):
        from deepcontext import _framework_cupti, _paths
        path = os.path.join(_paths.home(), "lib", "libdc_cupti_floor.so")
        if not os.path.isfile(path):
            raise RuntimeError("%s is missing: build the dc_cupti_floor target" % path)
        _framework_cupti.preload()
        self._library = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self._library.cupti_floor_start.argtypes = [ctypes.c_int]

    @contextlib.contextmanager
    def enabled(self, callbacks):
        status = self._library.cupti_floor_start(1 if callbacks else 0)
        if status != 0:
            raise RuntimeError("CUPTI floor: %s" % _ERRORS.get(status, "error %d" % status))
        try:
            yield
        finally:
            self._library.cupti_floor_stop()
