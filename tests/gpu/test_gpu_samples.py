"""--gpu-samples on a memory-bound and a compute-bound Triton kernel: the
dominant stall reasons point the right way, the samples hang under the
launching lines, and the hottest source lines are the load's use and the
FMA loop (tests/gpu/check_stalls.py)."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import BUILD, PYTHON, run_profiled  # noqa: E402
from gpu_probe import python_can  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_stalls.py")


pytestmark = pytest.mark.skipif(not python_can("torch, triton", "torch.cuda.is_available()"),
                                reason="no CUDA device or no Triton")


def test_stall_reasons_point_the_right_way_on_the_right_lines(tmp_path):
    out = tmp_path / "stalls.dctx"
    run_profiled([PYTHON, PROGRAM, "20"], out, options=["--gpu-samples"], check=0)
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    check = subprocess.run([PYTHON, os.path.join(HERE, "check_stalls.py"), str(out), PROGRAM],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = check.stdout.decode()
    assert check.returncode == 0, output
    assert "stall check: PASS" in output
