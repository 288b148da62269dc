"""--gpu-metrics on a memory-bound and a compute-bound Triton kernel and a
half-precision GEMM: DRAM throughput is high for the copy, SM throughput for
the FMA chain, each kernel node holds at most the bound's launches, and the
profile says what the measurement cost (tests/gpu/check_metrics.py)."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import BUILD, PYTHON, load_profile, run_profiled  # noqa: E402
from gpu_probe import python_can  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_metrics.py")


pytestmark = pytest.mark.skipif(not python_can("torch, triton", "torch.cuda.is_available()"),
                                reason="no CUDA device or no Triton")


def test_counters_point_the_right_way_within_the_bound(tmp_path):
    out = tmp_path / "metrics.dctx"
    run_profiled([PYTHON, PROGRAM, "10"], out,
                 options=["--gpu-metrics", "--gpu-metrics-kernels", "3"], check=0)
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    check = subprocess.run([PYTHON, os.path.join(HERE, "check_metrics.py"), str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = check.stdout.decode()
    assert check.returncode == 0, output
    tree = load_profile(out)
    assert tree.metadata["gpu_metrics"].startswith("on (auto range, kernel replay"), tree.metadata
    assert tree.metadata["gpu_metrics_launches_per_kernel"] == "3"
    assert int(tree.metadata["gpu_metrics_unmeasured"]) > 0
    measured = [k for k in tree.find(kind="gpu_kernel")
                if k.exclusive.get("gpu_sm_throughput_pct", {}).get("count", 0) > 0]
    assert measured
    for kernel in measured:
        assert kernel.exclusive["gpu_sm_throughput_pct"]["count"] <= 3, kernel
