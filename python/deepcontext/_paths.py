"""Where the compiled parts of DeepContext live.

The package works from a build tree (``build/python/deepcontext`` next to
``build/lib``, ``build/bin``, ``build/share``), from the source tree
(``python/deepcontext`` with a ``build/`` directory beside it), installed by
pip (``deepcontext/_home/{bin,lib,share}`` inside the package), from a
``cmake --install`` prefix (``<prefix>/python/deepcontext``), or from any
prefix named by the ``DEEPCONTEXT_HOME`` environment variable.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY = "libdeepcontext.so"


def _candidates():
    home = os.environ.get("DEEPCONTEXT_HOME")
    if home:
        yield home
    yield os.path.join(_HERE, "_home")                                  # pip install
    yield os.path.normpath(os.path.join(_HERE, "..", ".."))            # build tree
    yield os.path.normpath(os.path.join(_HERE, "..", "..", "build"))   # source tree


def home():
    """The prefix holding lib/, bin/ and share/deepcontext/."""
    tried = []
    for prefix in _candidates():
        if os.path.isfile(os.path.join(prefix, "lib", _LIBRARY)):
            return prefix
        tried.append(prefix)
    raise FileNotFoundError(
        "DeepContext runtime library not found (looked for lib/%s under: %s). "
        "Build it with `make` or set DEEPCONTEXT_HOME to the build directory."
        % (_LIBRARY, ", ".join(tried)))


def runtime_library():
    explicit = os.environ.get("DEEPCONTEXT_RUNTIME_LIB")
    if explicit:
        return explicit
    return os.path.join(home(), "lib", _LIBRARY)


def cli():
    return os.path.join(home(), "bin", "deepcontext")


def share():
    return os.path.join(home(), "share", "deepcontext")


def library_search_path():
    """sys.path without the current directory: where libraries and headers
    of the environment's packages (``nvidia/*/lib``) may be searched. A
    library found through the current directory (``''`` under ``python -c``,
    or a script run from its own folder) would be code planted by whoever
    can write there, loaded into every profiled process."""
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    entries = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or os.path.realpath(entry) == cwd:
            continue
        entries.append(entry)
    return entries
