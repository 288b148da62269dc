"""Reports an allocator snapshot at the start of profiling, as the adapter
does for CUDA, through the real runtime, with a stand-in for torch.cuda (no
GPU needed): the snapshot's shape is torch.cuda.memory_snapshot()'s.

argv[1]: profile path."""

import sys

from deepcontext import _cuda_memory, _runtime

MiB = 1 << 20

SNAPSHOT = [
    # A segment holding the weights and a free block; blocks without
    # "address" (older torch): the segment's address plus the sizes before.
    {"device": 0, "address": 0x7f0000000000, "total_size": 20 * MiB,
     "blocks": [{"size": 8 * MiB, "state": "active_allocated"},
                {"size": 2 * MiB, "state": "inactive"},
                {"size": 4 * MiB, "state": "active_allocated"},
                {"size": 6 * MiB, "state": "active_pending_free"}]},
    # Newer torch gives each block its address.
    {"device": 0, "address": 0x7f1000000000, "total_size": 2 * MiB,
     "blocks": [{"address": 0x7f1000000000, "size": 1 * MiB,
                 "state": "active_allocated"},
                {"address": 0x7f1000100000, "size": 1 * MiB, "state": "inactive"}]},
]


class _Cuda:
    @staticmethod
    def is_initialized():
        return True

    @staticmethod
    def memory_snapshot():
        return SNAPSHOT


class _Torch:
    cuda = _Cuda()


def start_region():
    _cuda_memory.report(_Torch())  # START_LINE


def main():
    _runtime.start()
    start_region()
    # The same snapshot again (a second profiled region start): nothing
    # counts twice.
    _cuda_memory.report(_Torch())
    _runtime.stop()
    _runtime.write(sys.argv[1])


main()
