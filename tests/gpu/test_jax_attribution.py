"""JAX's GPU kernels land under the Python line that ran the jitted function."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import PYTHON, load_profile, run_profiled  # noqa: E402
from kernel_queries import kernels_at, launches  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_jax.py")
STEPS = 20


def _has_jax_gpu():
    probe = subprocess.run(
        [PYTHON, "-c", "import jax, sys; sys.exit(0 if jax.default_backend() == 'gpu' else 1)"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false"))
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _has_jax_gpu(), reason="no JAX with a GPU backend")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("jax") / "jax.dctx"
    result = run_profiled([PYTHON, PROGRAM], out, check=0)
    assert b"jax done" in result.stdout, result.stderr.decode()[-3000:]
    return load_profile(out)


def test_every_kernel_is_attributed(tree):
    meta = tree.metadata
    assert not meta["gpu"].startswith("no GPU activity recorded"), meta["gpu"]
    assert int(meta.get("gpu_records", "0")) > 0, meta
    assert meta.get("gpu_dropped_records", "0") == "0", meta
    assert int(meta.get("gpu_unattributed_records", "0")) == 0, meta
    assert "gpu_warning" not in meta, meta


def test_kernels_of_each_jitted_call_are_under_its_line(tree):
    # Each step runs at least one kernel of its own under the line. The
    # kernels of XLA's autotuning at the first call run on its compiler
    # threads instead, outside any Python line.
    for marker in ("MARK_LAYER", "MARK_LOSS"):
        kernels = kernels_at(tree, PROGRAM, marker)
        assert launches(kernels) >= STEPS, (marker, [(k.name, launches([k])) for k in kernels])
        assert sum(k.exclusive["gpu_time"]["sum"] for k in kernels) > 0


def test_the_matmul_runs_under_both_lines(tree):
    # loss() calls layer() twice: its GEMMs are the layer's, twice per step.
    def gemm_runs(marker):
        return launches([k for k in kernels_at(tree, PROGRAM, marker)
                         if "gemm" in k.name.lower() or "matmul" in k.name.lower()
                         or "sm90" in k.name.lower()])
    assert gemm_runs("MARK_LAYER") >= STEPS
    assert gemm_runs("MARK_LOSS") >= 2 * STEPS
