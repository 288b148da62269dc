"""`cmake --install` gives a package that `python3 -m deepcontext` finds without
PYTHONPATH, whose help names the command and whose namespace is its API."""

import os
import subprocess

from conftest import BUILD, PYTHON


def test_python_m_deepcontext_after_install(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(venv)], check=True,
                   stdout=subprocess.PIPE, timeout=120)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "DEEPCONTEXT_HOME")}
    python = str(venv / "bin" / "python3")
    help_text = subprocess.run([python, "-m", "deepcontext", "--help"], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, check=True, timeout=60).stdout.decode()
    assert "Usage: deepcontext [OPTIONS] SUBCOMMAND" in help_text
    assert BUILD not in help_text and str(venv) not in help_text
    names = subprocess.run(
        [python, "-c", "import deepcontext; print(deepcontext.__file__); "
                       "print(sorted(n for n in dir(deepcontext) if not n.startswith('_')))"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, check=True, timeout=60).stdout.decode()
    assert names.splitlines() == [str(venv / "python" / "deepcontext" / "__init__.py"),
                                  "['Finding', 'is_tracing', 'load', 'profile', 'rule']"]
    # A usage error through the package: exit 2, the command's name.
    bad = subprocess.run([python, "-m", "deepcontext", "reprot"], cwd=tmp_path, env=env,
                         stderr=subprocess.PIPE, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.decode().startswith("deepcontext: unknown command 'reprot'")
