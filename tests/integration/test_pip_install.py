"""`pip install .` into a fresh virtualenv (offline, Debian's pip and
setuptools, --no-build-isolation): `deepcontext` on PATH, `import
deepcontext` and `python -m deepcontext` work from there, and it profiles
a torch program.

By default the package is installed from this build tree
(DEEPCONTEXT_PREBUILT), which keeps the test to seconds; with
DEEPCONTEXT_TEST_PIP_FROM_SOURCE=1 (`make test-pip`) pip compiles
everything itself, as a user's `pip install .` does."""

import os
import subprocess

from conftest import BUILD, PYTHON

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(args, env, cwd, timeout=600):
    result = subprocess.run([str(a) for a in args], env=env, cwd=cwd, timeout=timeout,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert result.returncode == 0, result.stdout.decode(errors="replace")[-4000:]
    return result.stdout.decode()


def test_pip_install_into_a_virtualenv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", venv], check=True)
    # When PYTHON itself runs in a virtualenv (torch installed there), the new
    # one sees only the base interpreter's packages: add the outer one's.
    outer = subprocess.run([PYTHON, "-c", "import site, sys; print('\\n'.join("
                            "site.getsitepackages()) if sys.prefix != sys.base_prefix else '')"],
                           stdout=subprocess.PIPE, check=True).stdout.decode()
    if outer.strip():
        inner = subprocess.run([venv / "bin" / "python", "-c",
                                "import site; print(site.getsitepackages()[0])"],
                               stdout=subprocess.PIPE, check=True).stdout.decode().strip()
        with open(os.path.join(inner, "outer_environment.pth"), "w") as pth:
            pth.write(outer)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "DEEPCONTEXT_HOME", "DEEPCONTEXT_BUILD")}
    env["PATH"] = "%s:%s" % (venv / "bin", env.get("PATH", "/usr/bin:/bin"))
    if not os.environ.get("DEEPCONTEXT_TEST_PIP_FROM_SOURCE"):
        env["DEEPCONTEXT_PREBUILT"] = BUILD
    run([venv / "bin" / "pip", "install", "--no-build-isolation", "--no-index", REPO],
        env, cwd=tmp_path, timeout=1800)

    # Everything below runs outside the source tree, with the venv's tools.
    package = run([venv / "bin" / "python", "-c",
                   "import deepcontext, os; print(os.path.dirname(deepcontext.__file__))"],
                  env, cwd=tmp_path).strip()
    assert package.startswith(str(venv)), package
    assert os.path.isfile(os.path.join(package, "_home", "lib", "libdeepcontext.so"))
    assert run(["deepcontext", "--version"], env, cwd=tmp_path).strip() == \
        run([venv / "bin" / "python", "-m", "deepcontext", "--version"], env, cwd=tmp_path).strip()

    program = tmp_path / "step.py"
    program.write_text("import torch\n"
                       "x = torch.randn(64, 64)\n"
                       "for _ in range(3):\n"
                       "    x = torch.tanh(x @ x)\n")
    out = tmp_path / "step.dctx"
    run(["deepcontext", "run", "-q", "-o", out, "--", venv / "bin" / "python", program],
        env, cwd=tmp_path)
    report = run(["deepcontext", "report", out, "--metric", "calls", "--top", "5"],
                 env, cwd=tmp_path)
    assert "aten::tanh" in report and "step.py:4" in report, report
