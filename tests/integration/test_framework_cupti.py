"""The runtime starts after the CUPTI library of the environment's framework
wheels (nvidia/*/lib/libcupti.so.N) is loaded, so that the process holds one
CUPTI, not the framework's and the CUDA toolkit's."""

import ctypes.util
import os
import shutil

from conftest import PYTHON, run_profiled

# Prints which of the fake environment's files are mapped, before the program
# imports anything itself.
_SHOW_MAPPED = ("import sys; root = sys.argv[1]; "
                "print(sorted({l.split()[-1] for l in open('/proc/self/maps') if root in l}))")


def _fake_environment(tmp_path):
    """A site folder whose nvidia/cu13/lib holds a loadable libcupti.so.13 (a
    copy of libz: only its loading is watched)."""
    site = tmp_path / "site"
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    libz = ctypes.util.find_library("z")
    source = next(p for p in ("/lib/x86_64-linux-gnu/" + libz, "/usr/lib/x86_64-linux-gnu/" + libz,
                              "/lib/aarch64-linux-gnu/" + libz, "/usr/lib/aarch64-linux-gnu/" + libz)
                  if os.path.exists(p))
    shutil.copy(source, lib / "libcupti.so.13")
    (lib / "libcupti.so.13.0.0").write_bytes(b"not a library")  # not versioned N: left alone
    return site, lib / "libcupti.so.13"


def test_the_frameworks_cupti_is_loaded_before_the_runtime_starts(tmp_path):
    site, cupti = _fake_environment(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW_MAPPED, str(tmp_path)], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site)}, check=0)
    assert str(cupti) in result.stdout.decode(), result.stdout.decode()
    assert "13.0.0" not in result.stdout.decode()


def test_a_named_cupti_library_is_left_to_the_runtime(tmp_path):
    site, cupti = _fake_environment(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW_MAPPED, str(tmp_path)], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site),
                               "DEEPCONTEXT_CUPTI_LIBRARY": "/nonexistent/libcupti.so.13"},
                          check=0)
    assert result.stdout.decode().strip() == "[]", result.stdout.decode()
