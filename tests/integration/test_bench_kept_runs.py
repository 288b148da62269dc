"""gpu_overhead.py --keep-runs / --from-runs (bench/kept_runs.py): processes
of several calls summed up in one table, run on the CPU here."""

import json
import os

import pytest

from bench_scripts import BENCH, bench_module
from conftest import BUILD, PYTHON, run_with_package

SCRIPT = os.path.join(BENCH, "gpu_overhead.py")


def kept(model="mlp", variants=("floor", "sampled"), settle_steps=3, device="cpu"):
    runs = bench_module("kept_runs")
    steps = {name: [[10.0, 10.0]] for name in ("plain",) + tuple(variants)}
    return runs.KeptRun(model, list(variants), settle_steps, "clock source tsc",
                        {"device": device, "ab_plain_ms": "10.0"}, steps)


def test_kept_runs_are_numbered_on_from_what_the_folder_holds(tmp_path):
    runs = bench_module("kept_runs")
    (tmp_path / "mlp-3.json").write_text("{}")
    (tmp_path / "gpt2-7.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("")
    assert runs.keep(str(tmp_path), kept()) == str(tmp_path / "mlp-4.json")
    assert runs.keep(str(tmp_path), kept()) == str(tmp_path / "mlp-5.json")
    assert runs.keep(str(tmp_path), kept(model="resnet50")) == str(tmp_path / "resnet50-1.json")
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".partial")]
    data = json.loads((tmp_path / "mlp-4.json").read_text())
    assert data["variants"] == ["floor", "sampled"] and data["values"]["device"] == "cpu"


def test_kept_runs_load_in_the_order_kept_and_only_the_models_asked(tmp_path):
    runs = bench_module("kept_runs")
    first, second = tmp_path / "a", tmp_path / "b"
    for _ in range(11):
        runs.keep(str(first), kept())
    runs.keep(str(first), kept(model="resnet50"))
    runs.keep(str(second), kept())
    loaded = runs.load([str(first), str(second)])
    # mlp-10 after mlp-9, not after mlp-1; folder by folder.
    assert [os.path.relpath(run.path, tmp_path) for run in loaded] == (
        ["a/mlp-%d.json" % n for n in range(1, 12)] + ["a/resnet50-1.json", "b/mlp-1.json"])
    assert [run.model for run in runs.load([str(first)], ["resnet50"])] == ["resnet50"]


def test_kept_runs_refuse_what_one_table_cannot_hold(tmp_path):
    runs = bench_module("kept_runs")
    with pytest.raises(SystemExit, match="no kept runs in"):
        runs.load([str(tmp_path)])
    with pytest.raises(SystemExit, match="No such file"):
        runs.load([str(tmp_path / "missing")])
    runs.keep(str(tmp_path), kept())
    runs.keep(str(tmp_path), kept(variants=("floor", "native")))
    with pytest.raises(SystemExit, match=r"mlp-2.json has regions floor,native and .*mlp-1.json "
                                         r"has floor,sampled"):
        runs.load([str(tmp_path)])
    (tmp_path / "mlp-2.json").unlink()
    runs.keep(str(tmp_path), kept(device="NVIDIA_H200"))
    with pytest.raises(SystemExit, match="has device NVIDIA_H200 and .* has cpu"):
        runs.load([str(tmp_path)])
    (tmp_path / "mlp-2.json").write_text('{"model": "mlp"}')
    with pytest.raises(SystemExit, match="not a run kept by --keep-runs"):
        runs.load([str(tmp_path)])
    (tmp_path / "mlp-2.json").write_text("{")
    with pytest.raises(SystemExit, match="cannot be read"):
        runs.load([str(tmp_path)])
    broken = kept()
    del broken.steps["sampled"]
    (tmp_path / "mlp-2.json").unlink()
    runs.keep(str(tmp_path), broken)
    with pytest.raises(SystemExit, match="has no steps of sampled"):
        runs.load([str(tmp_path)])


def in_process_on_cpu(*options):
    return run_with_package([PYTHON, SCRIPT, "--models", "mlp", "--steps", "2", "--device",
                             "cpu", "--variants", "floor,gpu-off", "--python", PYTHON,
                             "--build", BUILD] + list(options))


def test_gpu_overhead_sums_up_processes_kept_by_several_calls(tmp_path):
    folder = str(tmp_path / "runs")
    for _ in range(2):
        result = in_process_on_cpu("--in-process", "1", "--keep-runs", folder)
        assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
        # One process per call: no summary over processes.
        assert "Over processes" not in result.stdout.decode()
    assert sorted(os.listdir(folder)) == ["mlp-1.json", "mlp-2.json"]
    assert json.loads((tmp_path / "runs" / "mlp-1.json").read_text())["values"]["device"] == "cpu"

    result = run_with_package([PYTHON, SCRIPT, "--from-runs", folder])
    output = result.stdout.decode()
    assert result.returncode == 0, output + result.stderr.decode()
    lines = output.splitlines()
    assert lines[0] == "Kept runs: 2, from %s; device cpu" % folder
    assert lines[1].startswith("clock source ")
    assert [line for line in lines if line.startswith("| mlp #2 | 1 | ")], output
    over = [line for line in lines if line.startswith("| mlp | 2 | ")]
    assert len(over) == 1 and over[0].count("x (") == 2, output
    assert [line for line in lines if line.startswith("| mlp | gpu-off | floor | ")], output

    refused = run_with_package([PYTHON, SCRIPT, "--from-runs", folder, "--models", "gpt2"])
    assert refused.returncode != 0
    assert b"no kept runs of gpt2 in" in refused.stderr, refused.stderr
    refused = run_with_package([PYTHON, SCRIPT, "--keep-runs", folder, "--models", "mlp"])
    assert refused.returncode != 0
    assert b"--keep-runs needs --in-process" in refused.stderr, refused.stderr
    refused = run_with_package([PYTHON, SCRIPT, "--from-runs", folder, "--in-process", "1"])
    assert refused.returncode != 0
    assert b"--from-runs starts no process" in refused.stderr, refused.stderr
