"""A 4-rank gloo job under `deepcontext run`, merged with `deepcontext merge`:
the imbalance view names the rank made slow on purpose and its line."""

import glob
import gzip
import json
import os
import re
import socket

from conftest import PYTHON, cli, program, run_profiled
from markers import marker_line


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def imbalance_rows(report):
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Imbalance across 4 ranks"))
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        rows.append(line)
    return rows


def test_merged_ranks_name_the_slow_rank_and_its_line(tmp_path):
    out = tmp_path / "job.dctx"
    run_profiled([PYTHON, program("ranks_gloo.py"), str(free_port())], out, check=0)
    ranks = sorted(glob.glob(str(tmp_path / "job.rank*.dctx")))
    # One profile per rank, plus helper processes started while RANK was set.
    assert {re.search(r"rank(\d)", os.path.basename(p)).group(1) for p in ranks} == \
        {"0", "1", "2", "3"}, ranks

    merged = tmp_path / "merged.dctx"
    result = cli("merge", *ranks, "-o", merged)
    assert re.match(r"merged \d+ profiles of 4 ranks \(\d+ calling contexts\)",
                    result.stdout.decode()), result.stdout

    report = cli("report", merged, "--metric", "wall_time", "--width", "200").stdout.decode()
    rows = imbalance_rows(report)
    line = marker_line(program("ranks_gloo.py"), "SLOW_RANK_LINE")
    # The straggler's extra work is among the first rows; on a fast machine
    # the other ranks' wait in the next collective (the wait it causes) can
    # rank above it.
    slow = [row for row in rows[:3] if "ranks_gloo.py:%d" % line in row]
    assert slow, rows
    # #, Excess, "rank", N, Max, Median, Min, Ranks, Name, Line...
    assert "rank 2" in slow[0] and "1/4" in slow[0], rows
    assert slow[0].split()[-3] in ("aten::mm", "aten::matmul", "aten::tanh"), rows

    # `report` given the rank files shows the same section.
    side_by_side = cli("report", *ranks, "--metric", "wall_time", "--width", "200").stdout.decode()
    assert imbalance_rows(side_by_side)[0] == rows[0], side_by_side

    tree_json = cli("export", "--format", "json", merged).stdout
    assert b"wall_time.slowest_rank" in tree_json

    # Other tools' formats of the merged job.
    pprof = tmp_path / "job.pb.gz"
    cli("export", merged, "--format", "pprof", "-o", pprof)
    assert gzip.decompress(pprof.read_bytes())
    literal = json.loads(cli("export", merged, "--format", "hatchet").stdout)
    assert literal[0]["frame"]["type"] == "root" and "wall_time (inc)" in literal[0]["metrics"]
    result = cli("export", merged, "--format", "perfetto", check=1)
    assert b"no time axis" in result.stderr and not result.stdout

    # Rank 1 against rank 2: the slow line's work is added.
    # (Rank 0 has a helper process's profile too; ranks 1 and 2 have one each.)
    rank_of = {re.search(r"rank(\d)", os.path.basename(p)).group(1): p for p in ranks}
    diff = json.loads(cli("diff", rank_of["1"], rank_of["2"], "--format", "json",
                          "--metric", "wall_time").stdout)
    added = [c for c in diff["contexts"] if c["status"] == "added"
             and any(f["kind"] == "python" and f["line"] == line for f in c["path"])]
    assert any(c["path"][-1]["name"] == "aten::mm" for c in added), diff["contexts"][:3]
    result = cli("diff", rank_of["1"], rank_of["2"], "--metric", "nope", check=2)
    assert b"unknown metric 'nope'" in result.stderr


def test_merge_refuses_an_unreadable_file_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.dctx"
    bad.write_bytes(b"nope")
    result = cli("merge", bad, "-o", tmp_path / "out.dctx", check=1)
    assert b"deepcontext merge: " in result.stderr and b"bad magic" in result.stderr
    assert not (tmp_path / "out.dctx").exists()
