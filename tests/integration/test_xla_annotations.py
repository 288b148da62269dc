"""`deepcontext run` names the runtime library as the process's NVTX tool
(or the framework's CUPTI, with DEEPCONTEXT_XLA_NVTX=cupti), so that XLA's
ranges (HLO operations, compilations) reach the runtime, unless the user
named a tool already or turned it off."""

import os

from conftest import PYTHON, run_profiled
from fake_cupti_site import fake_cupti_site

_SHOW = "import os; print('NVTX=' + os.environ.get('NVTX_INJECTION64_PATH', ''))"


def _shown(result):
    lines = [l for l in result.stdout.decode().splitlines() if l.startswith("NVTX=")]
    assert lines, result.stdout.decode() + result.stderr.decode()
    return lines[0][len("NVTX="):]


def test_the_runtime_library_becomes_the_nvtx_tool(tmp_path):
    site, _ = fake_cupti_site(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site)}, check=0)
    shown = _shown(result)
    assert shown.endswith("/lib/libdeepcontext.so"), shown
    assert os.path.exists(shown), shown


def test_cupti_becomes_the_nvtx_tool_when_asked(tmp_path):
    site, cupti = fake_cupti_site(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site), "DEEPCONTEXT_XLA_NVTX": "cupti"}, check=0)
    assert _shown(result) == str(cupti)


def test_a_tool_the_user_named_is_kept(tmp_path):
    site, _ = fake_cupti_site(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site), "NVTX_INJECTION64_PATH": "/opt/nsys/x.so"},
                          check=0)
    assert _shown(result) == "/opt/nsys/x.so"


def test_the_setting_turns_it_off(tmp_path):
    site, _ = fake_cupti_site(tmp_path)
    result = run_profiled([PYTHON, "-c", _SHOW], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site), "DEEPCONTEXT_XLA_OPS": "0"}, check=0)
    assert _shown(result) == ""
