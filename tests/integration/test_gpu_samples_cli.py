"""`deepcontext run --gpu-samples` where it cannot sample: the run still
works and says why; options it cannot go with are refused up front. The
sampling itself is checked on the GPU machine
(scripts/gpu-finegrained-check.sh)."""

from conftest import NVIDIA_DRIVER, PYTHON, cli, load_profile, program, run_profiled


def test_gpu_samples_without_a_gpu_still_profile_the_cpu(tmp_path):
    out = tmp_path / "samples.dctx"
    run_profiled([PYTHON, program("cpu_accounting.py"), str(tmp_path / "measured")], out,
                 options=["--gpu-samples"], check=0)
    tree = load_profile(out)
    if not NVIDIA_DRIVER:  # the GPU tests check what a GPU machine records
        assert tree.metadata["gpu"].startswith("no GPU activity recorded")
        assert "gpu_samples" not in tree.metadata  # no backend, no sampling
    ops = [n for n in tree.find(kind="operator") if n.name == "aten::mm"]
    assert ops and sum(n.incl("cpu_time") for n in ops) > 0


def test_gpu_samples_exclude_trace_windows(tmp_path):
    result = cli("run", "--gpu-samples", "--trace-fraction", "0.5", "-o",
                 str(tmp_path / "x.dctx"), "--", PYTHON, "-c", "pass", check=None)
    assert result.returncode == 2
    assert b"--gpu-samples excludes --trace-fraction" in result.stderr, result.stderr
    assert not (tmp_path / "x.dctx").exists()
