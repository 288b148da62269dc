"""Reports the CUDA memory already in use when profiling starts.

The allocator hook only sees allocations and frees made while profiling. A
region that starts after the weights and optimizer state exist would then
report a device peak far below torch's own, and nobody would hold the
difference. At the start of profiling this module reads the caching
allocator's snapshot and reports every live block as a PREEXISTING
allocation (charged to an "[allocated before profiling]" node under the line
that started profiling) and every segment as PREEXISTING reserved memory.
Blocks the hook has already seen are not counted twice (the runtime matches
them by device and address).
"""

import ctypes
import os

from . import _runtime

# The snapshot is reported from inside this package, called from the user's
# line through contextlib (`with deepcontext.profile():`): frames of both are
# left out, so that the node hangs under the user's line.
_HIDDEN_FILES = (os.path.dirname(os.path.abspath(__file__)) + os.sep, os.sep + "contextlib.py")
_hidden = False

# include/deepcontext/dlmonitor.h
_DOMAIN_MEMORY = 2
_PHASE_INSTANT = 2
MEMORY_PREEXISTING = 1
MEMORY_RESERVED = 2


class _MemoryData(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("device", ctypes.c_int32),
                ("address", ctypes.c_void_p),
                ("bytes", ctypes.c_int64),
                ("total_allocated", ctypes.c_int64),
                ("flags", ctypes.c_uint32)]


class _Event(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("domain", ctypes.c_int),
                ("phase", ctypes.c_int),
                ("op", ctypes.c_void_p),
                ("gpu_api", ctypes.c_void_p),
                ("memory", ctypes.POINTER(_MemoryData)),
                ("context", ctypes.c_uint64)]


def live_blocks(snapshot):
    """(device, address, bytes, flags) of every block the program holds and
    every segment the allocator reserves, from torch.cuda.memory_snapshot().

    Blocks freed by the program but waiting for other streams
    ("active_pending_free") no longer count in torch's allocated bytes, so
    they are left out like free ones. Older torch releases give blocks no
    address: it is then the segment's address plus the sizes before it."""
    for segment in snapshot:
        device = int(segment.get("device", 0))
        address = int(segment["address"])
        yield device, address, int(segment["total_size"]), \
            MEMORY_PREEXISTING | MEMORY_RESERVED
        offset = address
        for block in segment.get("blocks", ()):
            size = int(block["size"])
            block_address = int(block.get("address", offset))
            offset = block_address + size
            if block.get("state") == "active_allocated":
                yield device, block_address, size, MEMORY_PREEXISTING


def report(torch):
    """Emits the blocks live now; returns their count (0 when CUDA is not
    initialized, as nothing can be allocated then)."""
    global _hidden
    if not torch.cuda.is_initialized():
        return 0
    if not _hidden:
        for pattern in _HIDDEN_FILES:
            _runtime.hide_leaf_files(pattern)
        _hidden = True
    emit = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Event))(
        _runtime.emit_function_address())
    count = 0
    for device, address, size, flags in live_blocks(torch.cuda.memory_snapshot()):
        if size <= 0:
            continue
        memory = _MemoryData(ctypes.sizeof(_MemoryData), device, address, size, 0, flags)
        event = _Event(ctypes.sizeof(_Event), _DOMAIN_MEMORY, _PHASE_INSTANT,
                       None, None, ctypes.pointer(memory), 0)
        emit(ctypes.byref(event))
        count += 1
    return count
