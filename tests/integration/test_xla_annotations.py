"""`deepcontext run` names the framework's CUPTI as the process's NVTX tool,
so that XLA's ranges (HLO operations, compilations) reach the runtime,
unless the user named a tool already or turned it off."""

import ctypes.util
import os
import shutil

from conftest import PYTHON, run_profiled

_SHOW = "import os; print('NVTX=' + os.environ.get('NVTX_INJECTION64_PATH', ''))"


def _fake_environment(tmp_path):
    """A site folder whose nvidia/cu13/lib holds a loadable libcupti.so.13 (a
    copy of libz: only its path matters here)."""
    site = tmp_path / "site"
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    libz = ctypes.util.find_library("z")
    source = next(p for p in ("/lib/x86_64-linux-gnu/" + libz, "/usr/lib/x86_64-linux-gnu/" + libz,
                              "/lib/aarch64-linux-gnu/" + libz, "/usr/lib/aarch64-linux-gnu/" + libz)
                  if os.path.exists(p))
    shutil.copy(source, lib / "libcupti.so.13")
    return site, lib / "libcupti.so.13"


def _shown(result):
    lines = [l for l in result.stdout.decode().splitlines() if l.startswith("NVTX=")]
    assert lines, result.stdout.decode() + result.stderr.decode()
    return lines[0][len("NVTX="):]


def test_the_frameworks_cupti_becomes_the_nvtx_tool(tmp_path):
    site, cupti = _fake_environment(tmp_path)
    env = {"PYTHONPATH": str(site)}
    env.pop("NVTX_INJECTION64_PATH", None)
    result = run_profiled([PYTHON, "-c", _SHOW], tmp_path / "p.dctx", env=env, check=0)
    assert _shown(result) == str(cupti)


def test_a_tool_the_user_named_is_kept(tmp_path):
    site, _ = _fake_environment(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site), "NVTX_INJECTION64_PATH": "/opt/nsys/x.so"},
                          check=0)
    assert _shown(result) == "/opt/nsys/x.so"


def test_the_setting_turns_it_off(tmp_path):
    site, _ = _fake_environment(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site), "DEEPCONTEXT_XLA_OPS": "0"}, check=0)
    assert _shown(result) == ""
