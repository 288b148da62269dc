"""Loads the CUPTI library this Python environment's frameworks use, before
the runtime looks for one.

PyTorch and JAX wheels bring their own libcupti (in the ``nvidia`` packages:
``nvidia/cu13/lib``, ``nvidia/cuda_cupti/lib``) and load it by its full
path when they are imported. A runtime started before that import would find
none loaded and take the CUDA toolkit's copy: the process would then hold two
CUPTI libraries, each believing it is the only one attached to the driver
(torch.profiler and DeepContext could not see each other as subscribers).
Loaded here first, the framework's own load finds the same file already
there, and the runtime reuses it (runtime/cupti/cupti_loader.h)."""

import ctypes
import glob
import os
import re

from . import _paths

_VERSIONED = re.compile(r"libcupti\.so\.\d+$")
_loaded = None  # what preload() loaded: it stays loaded, nothing to redo


def candidates():
    """The environment's libcupti files, one per package folder, in a stable
    order; [] without the ``nvidia`` packages. The current directory is
    never searched (_paths.library_search_path)."""
    found = []
    for entry in _paths.library_search_path():
        for folder in sorted(glob.glob(os.path.join(entry, "nvidia", "*", "lib"))):
            try:
                names = sorted(n for n in os.listdir(folder) if _VERSIONED.match(n))
            except OSError:
                continue  # unreadable: as if absent
            if names:
                path = os.path.join(folder, names[0])
                if path not in found:
                    found.append(path)
    return found


def preload():
    """Loads the first of candidates() that loads, unless the user named a
    CUPTI library (DEEPCONTEXT_CUPTI_LIBRARY); returns its path or None.
    Once one is loaded, later sessions (each profile() region) search no
    more."""
    global _loaded
    if os.environ.get("DEEPCONTEXT_CUPTI_LIBRARY"):
        return None
    if _loaded is not None:
        return _loaded
    for path in candidates():
        try:
            ctypes.CDLL(path)
        except OSError:
            continue  # not loadable here: the runtime's own search decides
        _loaded = path
        return path
    return None
