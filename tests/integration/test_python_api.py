"""`import deepcontext` and `python3 -m deepcontext` without `deepcontext run`."""

import subprocess

from conftest import CLI, PYTHON, load_profile, program, run_with_package
from markers import marker_line


def test_profile_context_manager(tmp_path):
    out = tmp_path / "region.dctx"
    result = run_with_package([PYTHON, program("region_api.py"), out])
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"region done\n"
    tree = load_profile(out)
    mm = tree.find(kind="operator", name="aten::mm")
    assert sum(n.calls() for n in mm) == 4
    inside = marker_line(program("region_api.py"), "INSIDE_LINE")
    assert all(any(a.line == inside for a in n.ancestors()) for n in mm)
    assert not tree.find(kind="operator", name="aten::tanh")
    assert not tree.find(kind="operator", name="aten::sigmoid")


def test_python_dash_m_deepcontext_is_the_cli(tmp_path):
    out = tmp_path / "m.dctx"
    result = run_with_package([PYTHON, "-m", "deepcontext", "run", "-o", out, "--", PYTHON,
                               program("fails.py"), "ok"])
    assert result.returncode == 0, result.stderr.decode()
    report = run_with_package([PYTHON, "-m", "deepcontext", "report", out], timeout=60)
    direct = subprocess.run([CLI, "report", str(out)], stdout=subprocess.PIPE, timeout=60)
    assert report.returncode == 0
    assert b"aten::mm" in report.stdout
    assert report.stdout == direct.stdout
