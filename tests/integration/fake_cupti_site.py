"""A stand-in for pip's NVIDIA packages, for the tests of how the framework's
CUPTI is found: a site folder whose nvidia/cu13/lib holds a loadable
libcupti.so.13 (a copy of libz: only its path and its loading matter)."""

import ctypes.util
import os
import shutil


def fake_cupti_site(tmp_path):
    """Returns (the site folder, the fake libcupti.so.13's path)."""
    site = tmp_path / "site"
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    libz = ctypes.util.find_library("z")
    source = next(p for p in ("/lib/x86_64-linux-gnu/" + libz, "/usr/lib/x86_64-linux-gnu/" + libz,
                              "/lib/aarch64-linux-gnu/" + libz, "/usr/lib/aarch64-linux-gnu/" + libz)
                  if os.path.exists(p))
    shutil.copy(source, lib / "libcupti.so.13")
    return site, lib / "libcupti.so.13"
