"""`deepcontext run --gpu-metrics` where it cannot measure: the run still
works; options it cannot go with are refused up front. The measurement
itself is checked on the GPU machine (scripts/gpu-finegrained-check.sh
PARTS=metrics)."""

import pytest

from conftest import NVIDIA_DRIVER, PYTHON, cli, load_profile, program, run_profiled


def test_gpu_metrics_without_a_gpu_still_profile_the_cpu(tmp_path):
    out = tmp_path / "metrics.dctx"
    run_profiled([PYTHON, program("cpu_accounting.py"), str(tmp_path / "measured")], out,
                 options=["--gpu-metrics", "--gpu-metrics-kernels", "2"], check=0)
    tree = load_profile(out)
    if not NVIDIA_DRIVER:  # the GPU tests check what a GPU machine records
        assert tree.metadata["gpu"].startswith("no GPU activity recorded")
        assert "gpu_metrics" not in tree.metadata  # no backend, no counters
    ops = [n for n in tree.find(kind="operator") if n.name == "aten::mm"]
    assert ops and sum(n.incl("cpu_time") for n in ops) > 0


@pytest.mark.parametrize("options, message", [
    (["--gpu-metrics", "--gpu-samples"], b"--gpu-samples excludes --gpu-metrics"),
    (["--gpu-metrics", "--trace-fraction", "0.5"], b"--gpu-metrics excludes --trace-fraction"),
    (["--gpu-metrics-kernels", "3"], b"--gpu-metrics-kernels requires --gpu-metrics"),
    (["--gpu-metrics", "--gpu-metrics-kernels", "0"], b"--gpu-metrics-kernels"),
])
def test_gpu_metrics_refuses_what_it_cannot_go_with(tmp_path, options, message):
    result = cli("run", *options, "-o", str(tmp_path / "x.dctx"), "--", PYTHON, "-c", "pass",
                 check=None)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr, result.stderr
    assert not (tmp_path / "x.dctx").exists()
