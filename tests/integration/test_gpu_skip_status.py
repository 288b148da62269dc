"""tests/gpu/skip_status.py: a pytest run whose every test skipped exits 77
(ctest's SKIP_RETURN_CODE for the GPU entries); any pass or failure keeps
pytest's own status."""

import os
import subprocess
import sys

import pytest

GPU_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu")


def _run(tmp_path, body):
    (tmp_path / "test_case.py").write_text("import pytest\n\n" + body)
    env = dict(os.environ, PYTHONPATH=GPU_TESTS)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "skip_status", str(tmp_path / "test_case.py")],
                          cwd=tmp_path, env=env, stdout=subprocess.PIPE, timeout=120).returncode


@pytest.mark.parametrize("body, status", [
    ("def test_a():\n    pytest.skip('no CUDA device')\n", 77),
    ("def test_a():\n    pytest.skip('no CUDA device')\n\ndef test_b():\n    pass\n", 0),
    ("def test_a():\n    pytest.skip('no CUDA device')\n\ndef test_b():\n    assert False\n", 1),
])
def test_exit_status(tmp_path, body, status):
    assert _run(tmp_path, body) == status
