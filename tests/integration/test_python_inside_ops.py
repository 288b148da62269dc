"""Python that runs inside an op (an autograd.Function's forward and
backward, code torch.compile generated) shows its own lines between the op
and the ops it calls; compiler frames put their work in a [compile] phase."""

import pytest

from conftest import PYTHON, load_profile, program, run_profiled
from markers import marker_line

SCRIPT = program("python_inside_ops.py")


def _lines(node):
    return [(a.file.rsplit("/", 1)[-1], a.line) for a in node.ancestors() if a.kind == "python"]


def _phases(node):
    return [a.name for a in node.ancestors() if a.kind == "phase"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    directory = tmp_path_factory.mktemp("inside")
    out = directory / "inside.dctx"
    result = run_profiled([PYTHON, SCRIPT, str(directory / "compiler")], out, check=0)
    assert b"python inside ops done" in result.stdout
    return load_profile(out)


def test_function_forward_and_backward_show_their_own_lines(tree):
    me = "python_inside_ops.py"
    apply_line = marker_line(SCRIPT, "MARK_APPLY")
    forward_line = marker_line(SCRIPT, "MARK_FUNCTION_FORWARD")
    backward_line = marker_line(SCRIPT, "MARK_FUNCTION_BACKWARD")
    muls = tree.find(kind="operator", name="aten::mul")
    forward = [n for n in muls if (me, forward_line) in _lines(n)]
    backward = [n for n in muls if (me, backward_line) in _lines(n)]
    assert forward and backward, [repr(n) for n in muls]
    assert sum(n.calls() for n in forward) == 3 and sum(n.calls() for n in backward) == 3
    for node in forward:
        # line -> [forward] -> Scale -> Scale.forward's line -> aten::mul
        assert node.parent.kind == "python" and node.parent.line == forward_line, repr(node)
        assert node.parent.parent.kind == "operator" and node.parent.parent.name == "Scale"
        assert (me, apply_line) in _lines(node)
    for node in backward:
        # Grafted under the line that applied the Function, in [backward].
        assert "[backward]" in _phases(node) and (me, apply_line) in _lines(node), repr(node)
        assert any(a.kind == "operator" and a.name == "ScaleBackward" for a in node.ancestors())


def test_compiler_frames_put_their_work_in_a_compile_phase(tree):
    me = "python_inside_ops.py"
    adds = tree.find(kind="operator", name="aten::add")
    compiled = [n for n in adds if (me, marker_line(SCRIPT, "MARK_COMPILE")) in _lines(n)]
    assert compiled, [repr(n) for n in adds]
    for node in compiled:
        # The phase sits right above the first compiler frame.
        frames = [a for a in node.ancestors() if a.kind == "python"
                  and a.file.endswith("torch/_dynamo/convert_frame.py")]
        assert [f.name for f in frames] == ["twice", "convert"], repr(node)
        assert frames[1].parent.kind == "phase" and frames[1].parent.name == "[compile]"
        assert _phases(node).count("[compile]") == 1, repr(node)


def test_an_op_after_another_below_the_same_compiler_frame_is_in_the_phase_too(tree):
    # Consecutive ops whose captures share the compiler frame and differ
    # below it: the second finds the phase from what the first found.
    me = "python_inside_ops.py"
    subs = [n for n in tree.find(kind="operator", name="aten::sub")
            if (me, marker_line(SCRIPT, "MARK_COMPILE")) in _lines(n)]
    assert len(subs) == 1, [repr(n) for n in tree.find(kind="operator", name="aten::sub")]
    frames = [a for a in subs[0].ancestors() if a.kind == "python"
              and a.file.endswith("torch/_dynamo/convert_frame.py")]
    assert [f.name for f in frames] == ["twice", "convert"], repr(subs[0])
    assert frames[1].parent.kind == "phase" and frames[1].parent.name == "[compile]"
    assert _phases(subs[0]).count("[compile]") == 1, repr(subs[0])


def test_autotuning_is_compile_and_the_launcher_glue_is_hidden(tree):
    me = "python_inside_ops.py"
    line = marker_line(SCRIPT, "MARK_GENERATED_CALL")
    negs = [n for n in tree.find(kind="operator", name="aten::neg") if (me, line) in _lines(n)]
    tuning = [n for n in negs if "[compile]" in _phases(n)]
    steady = [n for n in negs if "[compile]" not in _phases(n)]
    # Four runs, each autotuning twice first: the runs' own launches hang
    # right below the generated line, the benchmark ones in [compile].
    assert sum(n.calls() for n in steady) == 4, [repr(n) for n in negs]
    assert sum(n.calls() for n in tuning) == 8, [repr(n) for n in negs]
    for node in steady:
        assert node.parent.kind == "python" and node.parent.line == line, repr(node)
    for node in tuning:
        assert node.parent.kind == "phase" and node.parent.parent.line == line, repr(node)


def test_other_exec_code_keeps_its_frame(tree):
    # Only the launcher is glue; a helper made by exec() stays in the path.
    abs_nodes = tree.find(kind="operator", name="aten::abs")
    assert abs_nodes and all(
        any(a.kind == "python" and a.file == "<string>" and a.name == "helper"
            for a in n.ancestors()) for n in abs_nodes), [repr(n) for n in abs_nodes]
