"""`deepcontext report` on real profiles: views, options, several files, bad files."""

from conftest import PYTHON, cli, program, run_profiled


def _profile(tmp_path, name="r.dctx", steps=2):
    out = tmp_path / name
    run_profiled([PYTHON, program("train_mlp_cnn.py"), "--steps", str(steps)], out, check=0)
    return out


def test_views_and_options(tmp_path):
    out = _profile(tmp_path)
    top = cli("report", out).stdout.decode()
    assert "aten::conv2d" in top and "train_mlp_cnn.py:" in top and "[backward]" in top
    assert "%" in top
    bottom = cli("report", out, "--view", "bottom-up").stdout.decode()
    assert "aten::mkldnn_convolution" in bottom or "aten::convolution" in bottom
    flat = cli("report", out, "--view", "flat", "--metric", "wall_time").stdout.decode()
    assert "wall_time" in flat
    shallow = cli("report", out, "--depth", "2").stdout.decode()
    assert "aten::conv2d" not in shallow.split("Top hotspots")[0]


def test_several_files(tmp_path):
    first, second = _profile(tmp_path, "a.dctx"), _profile(tmp_path, "b.dctx")
    both = cli("report", first, second).stdout.decode()
    assert "a.dctx" in both and "b.dctx" in both and "process" in both


def test_bad_inputs_give_one_line_errors(tmp_path):
    good = _profile(tmp_path)
    truncated = tmp_path / "trunc.dctx"
    truncated.write_bytes(good.read_bytes()[:40])
    foreign = tmp_path / "notes.dctx"
    foreign.write_text("just some text\n")
    for bad in (truncated, foreign, tmp_path / "missing.dctx"):
        result = cli("report", bad, check=1)
        message = result.stderr.decode().strip()
        assert str(bad.name) in message and "\n" not in message, message
    result = cli("report", good, "--metric", "no_such_metric", check=2)
    assert b"cpu_time" in result.stderr  # lists the available metrics
