"""Whether the Python the GPU tests profile can run them: each test file
skips itself unless a probe in a child process (so that a CUDA
initialization failure cannot take the test process with it) succeeds."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from conftest import PYTHON  # noqa: E402


def python_can(imports, condition, env=None):
    """True when PYTHON imports `imports` (comma-separated modules) and
    `condition`, a Python expression over them, holds there."""
    code = "import sys, %s; sys.exit(0 if %s else 1)" % (imports, condition)
    probe = subprocess.run([PYTHON, "-c", code], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=env)
    return probe.returncode == 0
