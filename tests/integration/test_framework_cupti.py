"""The runtime starts after the CUPTI library of the environment's framework
wheels (nvidia/*/lib/libcupti.so.N) is loaded, so that the process holds one
CUPTI, not the framework's and the CUDA toolkit's."""

from conftest import PYTHON, run_profiled
from fake_cupti_site import fake_cupti_site

# Prints which of the fake environment's files are mapped, before the program
# imports anything itself.
_SHOW_MAPPED = ("import sys; root = sys.argv[1]; "
                "print(sorted({l.split()[-1] for l in open('/proc/self/maps') if root in l}))")


def _fake_environment(tmp_path):
    """fake_cupti_site, with a libcupti.so.13.0.0 beside it that is not a
    library (not versioned N: left alone)."""
    site, cupti = fake_cupti_site(tmp_path)
    (cupti.parent / "libcupti.so.13.0.0").write_bytes(b"not a library")
    return site, cupti


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
