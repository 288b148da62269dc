"""Bounds on what a profile grows to: cut Python stacks are marked, and call
paths beyond --max-contexts are folded into marked [other] nodes."""

from conftest import PYTHON, load_profile, run_profiled

TRUNCATED = "[outer Python frames beyond 256 not recorded]"
OTHER = "[other: paths beyond the context limit]"


def test_python_stacks_deeper_than_256_frames_are_marked(tmp_path):
    code = ("import sys, torch\n"
            "sys.setrecursionlimit(2000)\n"
            "x = torch.ones(4)\n"
            "def down(n):\n"
            "    return torch.relu(x) if n == 0 else down(n - 1)\n"
            "down(300)\n"
            "down(10)\n")
    out = tmp_path / "deep.dctx"
    run_profiled([PYTHON, "-c", code], out, check=0)
    tree = load_profile(out)
    relus = tree.find(kind="operator", name="aten::relu")
    assert relus
    deep = [n for n in relus
            if any(a.name == TRUNCATED for a in n.ancestors())]
    shallow = [n for n in relus if n not in deep]
    assert len(deep) == 1 and len(shallow) == 1, relus
    path = list(deep[0].ancestors())
    assert sum(1 for a in path if a.kind == "python" and a.name != TRUNCATED) == 256
    # The marker sits at the top of the Python path, under the thread.
    marker = next(a for a in path if a.name == TRUNCATED)
    assert marker.parent.kind == "thread"


def test_paths_beyond_max_contexts_are_folded_into_other(tmp_path):
    # 300 call sites on distinct lines: far more contexts than the cap.
    lines = ["import torch", "x = torch.ones(4)"]
    lines += ["torch.relu(x)"] * 300
    code = "\n".join(lines) + "\n"
    out = tmp_path / "capped.dctx"
    result = run_profiled([PYTHON, "-c", code], out, options=["--max-contexts", "40"],
                          check=0)
    assert b"warning" not in result.stderr, result.stderr
    full_out = tmp_path / "full.dctx"
    run_profiled([PYTHON, "-c", code], full_out, check=0)
    tree, full = load_profile(out), load_profile(full_out)
    others = tree.find(name=OTHER)
    assert others and all(n.kind == "scope" for n in others)
    assert not full.find(name=OTHER)
    assert len(tree.nodes) < 120 < len(full.nodes)
    # Nothing is lost: every op is still counted, most under [other].
    assert tree.total("calls") == full.total("calls")
    assert sum(n.incl("calls") for n in others) >= 200
