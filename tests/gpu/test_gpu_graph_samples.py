"""--gpu-samples on kernels replayed from a CUDA graph (programs/
gpu_graph_samples.py): every kernel of a graph launch shares the launch's
correlation id, so the samples are placed by kernel name on the line that
captured the kernel, where its GPU time lands; a name captured on two lines
stays under the replay line and is counted in the metadata."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import PYTHON, load_profile, run_profiled  # noqa: E402
from markers import marker_line  # noqa: E402
from kernel_queries import under_line  # noqa: E402
from gpu_probe import python_can  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_graph_samples.py")


pytestmark = pytest.mark.skipif(not python_can("torch", "torch.cuda.is_available()"),
                                reason="no CUDA device")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("graph_samples") / "graph_samples.dctx"
    result = run_profiled([PYTHON, PROGRAM, "200"], out, options=["--gpu-samples"], check=0)
    assert b"graph samples done" in result.stdout, result.stderr.decode()[-3000:]
    return load_profile(out)


def _sampled_kernels(tree):
    return [n for n in tree.nodes if n.kind == "gpu_kernel" and n.incl("gpu_samples") > 0]


def _at(tree, marker):
    line = marker_line(PROGRAM, marker)
    return [k for k in _sampled_kernels(tree) if under_line(k, line, PROGRAM)]


def test_sampling_is_on(tree):
    assert tree.metadata["gpu_samples"].startswith("on"), tree.metadata["gpu_samples"]
    assert int(tree.metadata["gpu_samples_attributed"]) > 0


def test_each_kernels_samples_land_on_its_capture_line(tree):
    matmul = _at(tree, "MATMUL_LINE")
    sin = _at(tree, "SIN_LINE")
    assert matmul, [repr(k) for k in _sampled_kernels(tree)]
    assert sin, [repr(k) for k in _sampled_kernels(tree)]
    # PyTorch's functor names the elementwise kernel: ...sin_kernel_cuda...
    assert any("sin_kernel" in k.name for k in sin), [repr(k) for k in sin]
    assert not any("sin_kernel" in k.name for k in matmul), [repr(k) for k in matmul]
    # The samples sit on the very kernel nodes that carry the replays' time
    # (graph node attribution), below the capturing launch call.
    for kernel in matmul + sin:
        assert kernel.parent.name.startswith("cuLaunch"), repr(kernel)
        assert kernel.excl("gpu_time") > 0, repr(kernel)
    assert int(tree.metadata["gpu_samples_graph_at_capture"]) > 0


def test_a_name_captured_on_two_lines_stays_under_the_replay_line(tree):
    replay = _at(tree, "REPLAY_LINE")
    assert replay, [repr(k) for k in _sampled_kernels(tree)]
    for kernel in replay:
        assert kernel.parent.name.startswith("cuGraphLaunch"), repr(kernel)
    assert not any("sin_kernel" in k.name for k in replay), [repr(k) for k in replay]
    for marker in ("ADD_LINE_1", "ADD_LINE_2"):
        assert not _at(tree, marker), [repr(k) for k in _at(tree, marker)]
    assert int(tree.metadata["gpu_samples_graph_at_launch"]) == int(
        sum(k.incl("gpu_samples") for k in replay))
