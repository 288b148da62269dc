"""Every Python call site keeps its own node: thousands of them on one
thread, sites that differ only in their file or only in their line, and
lines far apart in one function (programs/many_call_sites.py)."""

from collections import Counter

from conftest import PYTHON, load_profile, program, run_profiled

SCRIPT = program("many_call_sites.py")
SITES = 1100
ROUNDS = 3
GAP = 1024


def test_sites_alike_but_for_file_or_line_keep_their_nodes(tmp_path):
    out = tmp_path / "sites.dctx"
    run_profiled([PYTHON, SCRIPT, str(SITES), str(ROUNDS)], out, check=0)
    tree = load_profile(out)
    calls = Counter()
    for node in tree.find(kind="operator", name="aten::add"):
        frame = node.parent
        while frame.kind != "python":
            frame = frame.parent
        calls[(frame.file.rsplit("/", 1)[-1], frame.name, frame.line)] += node.calls()
    for filename in ("generated_sites_a.py", "generated_sites_b.py"):
        for i in range(SITES):
            # site_i's body is line 2 * i + 2.
            key = (filename, "site_%d" % i, 2 * i + 2)
            assert calls.pop(key, 0) == ROUNDS, key
        for line in range(2 * SITES + 2, 3 * SITES + 2):
            key = (filename, "lines", line)
            assert calls.pop(key, 0) == ROUNDS, key
        for line in (3 * SITES + 3, 3 * SITES + 3 + GAP):
            key = (filename, "gap", line)
            assert calls.pop(key, 0) == ROUNDS, key
    assert not calls, "ops at sites the program does not have: %r" % calls.most_common(5)
