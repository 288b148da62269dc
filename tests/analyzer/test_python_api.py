"""deepcontext.load: the tree, queries, data frame, findings and user rules,
read through the same C++ reader as the CLI."""

import json
import os
import subprocess
import sys

import pytest

import deepcontext
from conftest import BUILD, CLI, PROGRAMS, analyze, profile_program


@pytest.fixture(scope="module")
def chain_profile(tmp_path_factory):
    return profile_program("unfused_elementwise_bad.py",
                           tmp_path_factory.mktemp("api") / "chain.dctx")


def exported(path):
    result = subprocess.run([CLI, "export", "--format", "json", path],
                            stdout=subprocess.PIPE, check=True)
    return json.loads(result.stdout)


def test_tree_matches_the_cli_export(chain_profile):
    profile = deepcontext.load(chain_profile)
    export = exported(chain_profile)
    assert len(profile) == len(export["nodes"])
    assert profile.metrics == [m["name"] for m in export["metrics"]]
    for raw in export["nodes"]:
        node = profile.node(raw["id"])
        assert (node.kind, node.name, node.file, node.line) == (
            raw["kind"], raw["name"], raw["file"], raw["line"])
        assert (node.parent.id if node.parent else None) == raw["parent"]
        assert [c.id for c in node.children] == raw.get("children", [])
        for metric, value in raw.get("inclusive", {}).items():
            assert node.inclusive(metric) == value
        for metric, stats in raw.get("exclusive", {}).items():
            assert node.exclusive(metric) == stats["sum"]
            assert node.count(metric) == stats["count"]
    assert profile.metadata["pid"] == export["sources"][0]["metadata"]["pid"]


def test_find_and_under(chain_profile):
    profile = deepcontext.load(chain_profile)
    (tanh,) = profile.find(kind="operator", name="aten::tanh")
    assert tanh.count("calls") == 200
    gelu_line = [n for n in tanh.ancestors() if n.kind == "python"][0]
    assert (gelu_line.name, gelu_line.line) == ("gelu", 7)
    below = profile.under("unfused_elementwise_bad.py", 7)
    assert tanh in below
    assert {n.name for n in below if n.kind == "operator"} >= {"aten::mul", "aten::add"}
    assert profile.under("unfused_elementwise_bad.py", 999) == []
    assert profile.find(kind="operator", name="aten::no_such_op") == []
    with pytest.raises(ValueError, match="unknown kind"):
        profile.find(kind="kernel")


def test_to_dataframe(chain_profile):
    pytest.importorskip("pandas")
    profile = deepcontext.load(chain_profile)
    frame = profile.to_dataframe()
    assert len(frame) == len(profile)
    tanh = profile.find(kind="operator", name="aten::tanh")[0]
    row = frame.loc[tanh.id]
    assert row["name"] == "aten::tanh" and row["calls"] == 200
    assert row["wall_time_inclusive"] == tanh.inclusive("wall_time")


def test_findings_are_the_clis(chain_profile):
    profile = deepcontext.load(chain_profile)
    cli = json.loads(analyze("--format", "json", chain_profile).stdout)["findings"]
    assert profile.findings() == cli
    assert [f["rule"] for f in cli] == ["unfused_elementwise"]


RULES = '''
import deepcontext

@deepcontext.rule("user.tanh_heavy")
def tanh_heavy(profile):
    total = profile.total("wall_time")
    for node in profile.find(kind="operator", name="aten::tanh"):
        share = node.inclusive("wall_time") / total
        if share > 0.05:
            yield deepcontext.Finding(
                node, title="tanh holds %.0f%% of the op time" % (100 * share),
                benefit_seconds=(0, node.inclusive("wall_time") / 1e9),
                evidence=[("wall_time", node.inclusive("wall_time"), "ns", ">", 0.05 * total)],
                suggestion="Use a cheaper activation.")
'''


def test_user_rules_from_the_cli(chain_profile, tmp_path):
    rules = tmp_path / "my_rules.py"
    rules.write_text(RULES)
    text = analyze("--rules", rules, chain_profile).stdout.decode()
    assert "user.tanh_heavy: tanh holds" in text
    assert "unfused_elementwise_bad.py:7 (gelu) -> aten::tanh [forward]" in text
    document = json.loads(analyze("--rules", rules, "--format", "json", chain_profile).stdout)
    rules_seen = [f["rule"] for f in document["findings"]]
    assert sorted(rules_seen) == ["unfused_elementwise", "user.tanh_heavy"]
    user = [f for f in document["findings"] if f["rule"] == "user.tanh_heavy"][0]
    assert user["context"]["operator"] == "aten::tanh"
    assert user["context"]["line"] == 7


def test_user_rule_errors_are_reported(chain_profile, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import deepcontext\n@deepcontext.rule('user.bad')\n"
                      "def bad(profile):\n    return [42]\n")
    result = analyze("--rules", broken, chain_profile, check=2)
    assert b"deepcontext.Finding" in result.stderr
    missing = analyze("--rules", tmp_path / "none.py", chain_profile, check=2)
    assert b"none.py" in missing.stderr


def test_bad_files_raise_with_the_readers_message(tmp_path):
    bad = tmp_path / "bad.dctx"
    bad.write_bytes(b"not a profile")
    with pytest.raises(deepcontext._profile.ProfileError, match="bad magic"):
        deepcontext.load(str(bad))
    result = analyze(bad, check=1)
    assert b"bad magic" in result.stderr


DIFF_PROGRAM = os.path.join(PROGRAMS, "diff_work.py")
DIFF_LINE = [i for i, text in enumerate(open(DIFF_PROGRAM), 1) if "# DIFF_LINE" in text][0]


@pytest.fixture(scope="module")
def diff_profiles(tmp_path_factory):
    """Two runs of diff_work.py: 20, then 400 matrix products at DIFF_LINE."""
    folder = tmp_path_factory.mktemp("diff")
    return (profile_program("diff_work.py", folder / "before.dctx", args=[20]),
            profile_program("diff_work.py", folder / "after.dctx", args=[400]))


def cli_diff(*args):
    result = subprocess.run([CLI, "diff", "--format", "json"] + [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


def at_diff_line(context):
    return any(f["kind"] == "python" and f["file"].endswith("diff_work.py")
               and f["line"] == DIFF_LINE for f in context["path"])


def test_diff_ranks_the_changed_line_first_like_the_cli(diff_profiles):
    before, after = diff_profiles
    diff = deepcontext.load(before).diff(after)
    assert diff.document == cli_diff(before, after)
    assert (diff.before, diff.after) == (before, after)
    top = diff.contexts[0]
    assert at_diff_line(top), top["path"]
    assert top["status"] == "changed" and diff.change(top) > 0
    assert diff.totals[diff.metric]["change"] > 0

    calls = deepcontext.load(before).diff(deepcontext.load(after), metric="calls")
    assert calls.document == cli_diff("--metric", "calls", before, after)
    assert calls.metric == "calls"
    assert at_diff_line(calls.contexts[0]) and calls.change(calls.contexts[0]) > 0
    (mm,) = [c for c in calls.contexts if at_diff_line(c) and c["path"][-1]["name"] == "aten::mm"]
    assert mm["status"] == "changed"
    assert mm["metrics"]["calls"]["exclusive"] == {
        "before": 20, "after": 400, "change": 380, "relative": 19}
    changes = [abs(calls.change(c)) for c in calls.contexts if calls.change(c) != 0]
    assert changes == sorted(changes, reverse=True)

    backwards = deepcontext.load(after).diff(before, metric="calls")
    assert at_diff_line(backwards.contexts[0]) and backwards.change(backwards.contexts[0]) < 0
    (mm,) = [c for c in backwards.contexts
             if at_diff_line(c) and c["path"][-1]["name"] == "aten::mm"]
    assert backwards.change(mm) == -380


def test_diff_errors_carry_the_readers_message(diff_profiles, tmp_path):
    before, _ = diff_profiles
    bad = tmp_path / "bad.dctx"
    bad.write_bytes(b"not a profile")
    profile = deepcontext.load(before)
    with pytest.raises(deepcontext._profile.ProfileError, match="bad magic"):
        profile.diff(str(bad))
    with pytest.raises(ValueError, match="unknown metric 'no_such'; available metrics: .*calls"):
        profile.diff(before, metric="no_such")
