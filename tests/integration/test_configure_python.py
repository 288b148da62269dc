"""The build's Python interpreter (DEEPCONTEXT_PYTHON, make's PYTHON): a bare
name is looked up on PATH, as a shell would, and an interpreter that does
not exist is named in a warning (CMakeLists.txt)."""

import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))


def configure(tmp_path, python):
    """A runtime-only configure (seconds) from the source tree, as `make`
    runs cmake; the cache's interpreter and cmake's output."""
    build = tmp_path / "build"
    result = subprocess.run(["cmake", "-S", SOURCE, "-B", str(build),
                             "-DDEEPCONTEXT_RUNTIME_ONLY=ON", "-DDEEPCONTEXT_PYTHON=" + python],
                            cwd=SOURCE, env=dict(os.environ, PWD=SOURCE), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=300)
    output = result.stdout.decode()
    assert result.returncode == 0, output
    cache = (build / "CMakeCache.txt").read_text()
    value = [line.split("=", 1)[1] for line in cache.splitlines()
             if line.startswith("DEEPCONTEXT_PYTHON:")]
    return value[0], " ".join(output.split())


def test_a_bare_interpreter_name_is_found_on_path(tmp_path):
    python, output = configure(tmp_path, "python3")
    # Made absolute in the source tree, where no python3 is, it would leave
    # the integration and GPU tests out.
    assert python == shutil.which("python3"), output
    assert "DEEPCONTEXT_PYTHON: python3 is %s" % python in output


def test_a_missing_interpreter_is_named(tmp_path):
    missing = str(tmp_path / "no-such-python")
    python, output = configure(tmp_path, missing)
    assert python == missing
    assert "%s does not exist: the integration and GPU tests are not registered" % missing \
        in output, output
