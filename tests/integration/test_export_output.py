"""`deepcontext export -o P` never removes or damages what it did not
create: it refuses targets that are not regular files and replaces P only
with a complete file."""

import json
import os
import stat

import pytest

from conftest import PYTHON, cli, run_profiled


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "p.dctx"
    run_profiled([PYTHON, "-c", "sum(range(1000))"], out, check=0)
    return out


def test_export_replaces_the_output_with_a_complete_file(tmp_path, profile):
    target = tmp_path / "out.json"
    target.write_text("old")
    cli("export", "--format", "json", "-o", target, profile)
    json.loads(target.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left


def test_export_refuses_a_device_and_leaves_it_in_place(tmp_path, profile):
    if os.getuid() != 0:
        pytest.skip("making a device node needs root")
    device = tmp_path / "full"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # like /dev/full
    result = cli("export", "--format", "json", "-o", device, profile, check=1)
    assert b"not a regular file" in result.stderr
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


def test_export_refuses_a_fifo_and_a_directory(tmp_path, profile):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (fifo, tmp_path):
        result = cli("export", "--format", "json", "-o", target, profile, check=1)
        assert b"not a regular file" in result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_failed_export_leaves_the_old_file(tmp_path, profile):
    # A directory the export cannot create its temporary in (root ignores
    # permissions, so the directory is made to vanish instead).
    missing = tmp_path / "gone" / "out.json"
    result = cli("export", "--format", "json", "-o", missing, profile, check=1)
    assert b"cannot write" in result.stderr
    assert not (tmp_path / "gone").exists()
