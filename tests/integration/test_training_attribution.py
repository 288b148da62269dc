"""A real training loop under `deepcontext run`: forward ops hang under the
Python line that calls the model, backward ops are grafted under the same
line, stdout and the exit status pass through."""

from conftest import PYTHON, load_profile, program, run_plain, run_profiled
from markers import marker_line

SCRIPT = program("train_mlp_cnn.py")


def _line_node(node, line):
    return [a for a in node.ancestors() if a.kind == "python"
            and a.file.endswith("train_mlp_cnn.py") and a.line == line]


def test_forward_and_backward_under_model_call_line(tmp_path):
    out = tmp_path / "train.dctx"
    run_profiled([PYTHON, SCRIPT, "--steps", "4"], out, check=0)
    tree = load_profile(out)
    call_line = marker_line(SCRIPT, "MODEL_CALL_LINE")

    for op in ("aten::linear", "aten::conv2d"):
        nodes = tree.find(kind="operator", name=op)
        assert nodes, "no %s node" % op
        for node in nodes:
            assert _line_node(node, call_line), "%s not under line %d: %r" % (op, call_line, node)
            assert node.parent.kind == "phase" and node.parent.name == "[forward]", repr(node)
        assert sum(n.calls() for n in nodes) == 4

    for backward in ("AddmmBackward0", "ConvolutionBackward0"):
        nodes = tree.find(kind="operator", name=backward)
        assert nodes, "no %s node" % backward
        for node in nodes:
            assert _line_node(node, call_line), "%s not grafted: %r" % (backward, node)
            assert node.parent.kind == "phase" and node.parent.name == "[backward]"
            assert not any(a.kind == "python" and a.line == marker_line(SCRIPT, "BACKWARD_LINE")
                           for a in node.ancestors()), repr(node)
        assert sum(n.calls() for n in nodes) == 4


def test_metrics_are_aggregated(tmp_path):
    out = tmp_path / "train.dctx"
    run_profiled([PYTHON, SCRIPT, "--steps", "3"], out, options=["--exact-cpu-time"], check=0)
    tree = load_profile(out)
    assert {m["name"] for m in tree.data["metrics"]} >= {"calls", "cpu_time", "wall_time"}
    mm = tree.find(kind="operator", name="aten::addmm")
    assert mm and all(n.exclusive["cpu_time"]["count"] == 3 for n in mm)
    for n in mm:
        stats = n.exclusive["wall_time"]
        assert 0 < stats["min"] <= stats["max"] <= stats["sum"]
    assert tree.total("cpu_time") > 0
    assert tree.metadata["pid"].isdigit()
    assert tree.metadata["python_version"].startswith("3.")
    assert tree.metadata["torch_version"]
    # A CPU-only program reports why device memory was not tracked: a
    # torch without CUDA, or CUDA never initialized.
    reason = tree.metadata["gpu_memory"]
    assert reason.startswith("not tracked: ") and (
        "has no CUDA" in reason or "never initialized" in reason), reason
    assert "train_mlp_cnn.py" in tree.metadata["command_line"]


def test_stdout_and_exit_status_pass_through(tmp_path):
    plain = run_plain([PYTHON, SCRIPT, "--steps", "2", "--exit", "3"])
    profiled = run_profiled([PYTHON, SCRIPT, "--steps", "2", "--exit", "3"],
                            tmp_path / "x.dctx")
    assert plain.returncode == 3
    assert profiled.returncode == 3
    assert profiled.stdout == plain.stdout
    assert (tmp_path / "x.dctx").exists()


def test_profile_size_does_not_grow_with_steps(tmp_path):
    small, large = tmp_path / "s.dctx", tmp_path / "l.dctx"
    run_profiled([PYTHON, SCRIPT, "--steps", "2"], small, check=0)
    run_profiled([PYTHON, SCRIPT, "--steps", "20"], large, check=0)
    size_small, size_large = small.stat().st_size, large.stat().st_size
    assert size_large < size_small * 1.5 + 512, (size_small, size_large)
