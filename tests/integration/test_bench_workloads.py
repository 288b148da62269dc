"""The benchmark workloads (bench/workloads/) and bench/gpu_overhead.py's
in-process comparisons run (on the CPU here; bench/ runs them on GPUs)."""

import os

import pytest

from bench_scripts import BENCH, WORKLOAD, bench_module
from conftest import BUILD, PYTHON, run_with_package


def run_mlp_on_cpu(*options):
    return run_with_package([PYTHON, WORKLOAD, "--model", "mlp", "--device", "cpu",
                             "--warmup", "1"] + list(options))


def test_gpu_workload_alternates_plain_steps_and_profiled_regions():
    result = run_mlp_on_cpu("--ab-rounds", "2", "--steps", "3", "--ab-variants", "sampled,gpu-off")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert values["rounds"] == "2"
    for key in ("ab_first_plain_ms", "ab_plain_ms", "ab_sampled_ms", "ab_gpu-off_ms",
                "ab_plain_steady_ms", "ab_sampled_steady_ms", "ab_gpu-off_steady_ms"):
        assert float(values[key]) > 0, values
    for key in ("ab_plain_start_ms", "ab_sampled_start_ms"):
        float(values[key])  # negative when the first steps were the fast ones
    # Queuing a step's work is part of the step (each step's is, so their
    # medians keep the order).
    for name in ("plain", "sampled", "gpu-off"):
        assert 0 < float(values["ab_%s_issue_ms" % name]) <= float(values["ab_%s_ms" % name])



def test_gpu_workload_removes_the_folder_its_regions_wrote(tmp_path, monkeypatch):
    # Every benchmark run used to leave a dc-ab-* folder with a profile in
    # the temporary directory.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "2", "--ab-variants", "sampled")
    assert result.returncode == 0, result.stderr.decode()
    assert "ab_sampled_ms=" in result.stdout.decode()
    # torch 2.x keeps its compiler cache there too (torchinductor_<user>),
    # which is torch's own and outlives any run.
    assert sorted(p.name for p in scratch.iterdir()
                  if not p.name.startswith("torchinductor_")) == []

def alternate_gpu_off_with_log(tmp_path, option, steps):
    """Two rounds of plain and gpu-off blocks, writing the log `option`
    names; the log, read back."""
    import json
    log = tmp_path / "log.json"
    result = run_mlp_on_cpu("--ab-rounds", "2", "--steps", str(steps), "--ab-variants",
                            "gpu-off", option, str(log))
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(log.read_text())


def test_gpu_workload_step_log_keeps_every_step_of_every_block(tmp_path):
    steps = alternate_gpu_off_with_log(tmp_path, "--step-log", 3)
    assert sorted(steps) == ["gpu-off", "plain"]
    for blocks in steps.values():
        assert [len(block) for block in blocks] == [3, 3]
        assert all(t > 0 for block in blocks for t in block)
    # Without regions: the timed steps, one block each.
    import json
    log = tmp_path / "steps.json"
    result = run_mlp_on_cpu("--steps", "2", "--blocks", "3", "--step-log", str(log))
    assert result.returncode == 0, result.stderr.decode()
    assert [len(block) for block in json.loads(log.read_text())["timed"]] == [2, 2, 2]


def _gpu_models():
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_models", WORKLOAD)
    gpu_models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_models)
    return gpu_models


def _region_values(regions):
    """gpu_models.py's ab_* values for {region: (median step ms, steady
    mean ms)}, as --in-process reads them from its output."""
    values = {}
    for name, (median, steady) in regions.items():
        values["ab_%s_ms" % name] = str(median)
        values["ab_%s_steady_ms" % name] = str(steady)
    return values


def test_block_summary_splits_a_region_start_from_its_steady_steps():
    gpu_models = _gpu_models()
    # Two regions whose first step took 50 ms more than their 10 ms steps.
    blocks = [[0.060, 0.010, 0.010, 0.010], [0.060, 0.010, 0.010, 0.010]]
    summary = gpu_models.block_summary(blocks, 1)
    assert summary["steady_ms"] == pytest.approx(10.0)
    assert summary["start_ms"] == pytest.approx(50.0)
    assert summary["mean_ms"] == pytest.approx(22.5)
    assert summary["ms"] == pytest.approx(10.0)


def test_in_process_own_share_subtracts_the_matching_floor():
    bench = bench_module("in_process")
    values = _region_values({"plain": (10, 10), "floor": (11, 11), "floor+cupti": (12.5, 12),
                             "sampled": (13.5, 13.2), "gpu-off": (11.5, 11.4),
                             "windows-10": (10.1, 10.3)})
    rows = bench.own_share_rows(
        "mlp", values, ["floor", "floor+cupti", "sampled", "gpu-off", "windows-10"])
    # GPU-tracing regions against floor+cupti, the others against floor;
    # floors and trace windows get no row.
    assert rows == [
        "| mlp | sampled | floor+cupti | +0.100x (+1.00) | +0.120x (+1.20) |",
        "| mlp | gpu-off | floor | +0.050x (+0.50) | +0.040x (+0.40) |",
    ]
    # Without its floor a region gets no row.
    assert bench.own_share_rows("mlp", values, ["floor", "sampled"]) == []


def test_every_script_knows_the_workloads_floors():
    # A floor the workload gains and a script does not know would count as
    # a DeepContext region there (gpu_overhead) or be refused (runtime_samples).
    floors = set(_gpu_models().FLOOR_VARIANTS)
    assert "floor+records" in floors
    assert set(bench_module("in_process").FLOOR_REGIONS) == floors
    assert set(bench_module("runtime_samples").REFERENCES) == floors | {"plain"}
    assert bench_module("in_process").deepcontext_regions(
        ["floor+records", "floor+cupti", "sampled"]) == ["sampled"]


def test_in_process_compares_gpu_tracing_regions_with_other_profilers():
    bench = bench_module("in_process")
    values = _region_values({"plain": (10, 10), "sampled": (13.5, 13.2),
                             "gpu-off": (11.5, 11.4), "proton": (12.5, 13.6),
                             "torch-profiler": (20, 21)})
    variants = ["sampled", "gpu-off", "proton", "torch-profiler"]
    # Only regions that trace the GPU, as Proton and torch.profiler do.
    assert bench.versus_other_profiler_rows("mlp", values, variants) == [
        "| mlp | sampled | proton | +0.100x (+1.00) | -0.040x (-0.40) |",
        "| mlp | sampled | torch-profiler | -0.650x (-6.50) | -0.780x (-7.80) |",
    ]
    # Other profilers are neither DeepContext regions nor floors.
    assert bench.own_share_rows("mlp", values, variants) == []


def test_in_process_cpu_side_compares_the_time_to_queue_a_step():
    bench = bench_module("in_process")
    values = _region_values({"plain": (10, 10), "floor+cupti": (10.2, 10.2),
                             "sampled": (10.5, 10.4)})
    values.update({"ab_plain_issue_ms": "6", "ab_floor+cupti_issue_ms": "7.5",
                   "ab_sampled_issue_ms": "9"})
    assert bench.cpu_side_row("resnet50", values, ["floor+cupti", "sampled"]) == (
        "| resnet50 | 6.00 (60 % of the step) | 7.50 (1.250x, +1.50 ms) | "
        "9.00 (1.500x, +3.00 ms) |")
    # Output of a workload that did not time it gets no row.
    del values["ab_plain_issue_ms"]
    assert bench.cpu_side_row("resnet50", values, ["sampled"]) is None


def test_gpu_overhead_reads_cpu_lists_as_taskset_writes_them():
    import argparse
    bench = bench_module("gpu_overhead")
    assert bench.cpu_list("0-3,6") == {0, 1, 2, 3, 6}
    assert bench.cpu_list("5") == {5}
    assert bench.cpu_text([0, 1, 2, 3, 6, 8, 9]) == "0-3,6,8-9"
    for bad in ("0-", "a", "3-1", "-2"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.cpu_list(bad)


def test_gpu_overhead_runs_its_processes_on_the_cpus_given():
    import subprocess
    script = os.path.join(BENCH, "gpu_overhead.py")
    result = subprocess.run([PYTHON, script, "--cpus", "0", "--in-process", "1", "--models",
                             "mlp", "--steps", "2", "--device", "cpu", "--variants", "sampled",
                             "--build", "/nonexistent"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert b"processes run on 1 CPUs (0)" in result.stdout, result.stdout + result.stderr
    refused = subprocess.run([PYTHON, script, "--cpus", "100000", "--in-process", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert refused.returncode != 0
    assert b"--cpus 100000:" in refused.stderr, refused.stderr


def test_proton_regions_load_the_cupti_the_process_has(tmp_path, monkeypatch):
    gpu_models = _gpu_models()
    monkeypatch.delenv("TRITON_CUPTI_LIB_PATH", raising=False)
    library = tmp_path / "nvidia" / "libcupti.so.13"
    library.parent.mkdir()
    library.write_bytes(b"")
    maps = tmp_path / "maps"
    mapping = "7f0000000000-7f0000001000 r-xp 00000000 08:01 42 %s\n" % library
    maps.write_text("7f0000002000-7f0000003000 r-xp 00000000 08:01 7 /usr/lib/libc.so.6\n"
                    + mapping + mapping)
    assert gpu_models.cupti_for_proton(str(tmp_path / "work"), str(maps)) == str(library)
    folder = os.environ["TRITON_CUPTI_LIB_PATH"]
    assert os.path.realpath(os.path.join(folder, "libcupti.so")) == str(library)


def test_proton_regions_keep_their_own_cupti_without_one_copy_loaded(tmp_path, monkeypatch):
    gpu_models = _gpu_models()
    monkeypatch.delenv("TRITON_CUPTI_LIB_PATH", raising=False)
    maps = tmp_path / "maps"
    maps.write_text("1000-2000 r-xp 00000000 08:01 42 /a/libcupti.so.13\n"
                    "3000-4000 r-xp 00000000 08:01 43 /b/libcupti.so.12\n")
    assert gpu_models.cupti_for_proton(str(tmp_path), str(maps)) is None
    maps.write_text("1000-2000 r-xp 00000000 08:01 42 /usr/lib/libc.so.6\n")
    assert gpu_models.cupti_for_proton(str(tmp_path), str(maps)) is None
    assert "TRITON_CUPTI_LIB_PATH" not in os.environ


def test_gpu_workload_refuses_torch_profiler_regions_beside_cupti_floors():
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "1", "--ab-variants",
                            "floor+cupti,torch-profiler")
    assert result.returncode != 0
    assert b"cannot be combined with the CUPTI floors" in result.stderr, result.stderr
    assert b"ab_plain_ms" not in result.stdout


def test_gpu_workload_times_torch_profiler_regions():
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "2", "--ab-variants",
                            "sampled,torch-profiler")
    assert result.returncode == 0, result.stderr
    assert b"ab_torch-profiler_ms=" in result.stdout, result.stdout
    assert b"ab_sampled_ms=" in result.stdout, result.stdout


def test_gpu_workload_refuses_an_unknown_variant():
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "1", "--ab-variants", "sampled,fast")
    assert result.returncode != 0
    assert b"unknown --ab-variants fast" in result.stderr, result.stderr


def test_gpu_workload_measures_the_record_function_floor():
    # "floor" is a no-op RecordFunction callback, built like the adapter.
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "2", "--ab-variants", "floor,off")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert float(values["ab_floor_ms"]) > 0 and float(values["ab_off_ms"]) > 0, values


def test_gpu_workload_times_a_region_without_any_profiler():
    # "none": plain steps in a region of their own, so that the drift of
    # the plain steps after regions from those before any (the first
    # plain block) can be told from a cost a region left behind.
    assert _gpu_models().FloorRegions(["none"])._floor is None
    assert _gpu_models().FloorRegions(["none"])._cupti is None
    result = run_mlp_on_cpu("--ab-rounds", "2", "--steps", "2", "--ab-variants", "none,floor")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    for key in ("ab_first_plain_ms", "ab_plain_ms", "ab_none_ms", "ab_floor_ms"):
        assert float(values[key]) > 0, values
    # Not a DeepContext region: no share over a floor is taken for it.
    assert bench_module("in_process").deepcontext_regions(["none", "sampled"]) == ["sampled"]


def test_gpu_workload_times_its_steps_under_one_floor():
    # A process of its own under the RecordFunction floor (runtime_samples
    # --reference): the floor is built and installed, and a refused install
    # fails the run.
    result = run_mlp_on_cpu("--steps", "2", "--floor", "floor")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert float(values["step_ms"]) > 0
    result = run_mlp_on_cpu("--steps", "2", "--floor", "no-such-floor")
    assert result.returncode != 0 and b"invalid choice" in result.stderr


def test_gpu_workload_in_its_own_process_prints_the_cpu_side_of_its_steps():
    # The time to queue a step's work, up to its synchronize: never longer
    # than the step it is part of.
    result = run_mlp_on_cpu("--steps", "3")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert 0 < float(values["cpu_side_ms"]) <= float(values["step_ms"]), values


def test_gpu_workload_times_trace_window_regions_by_their_mean_step():
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "4", "--ab-variants",
                            "windows-25,windows-min-gpu-off", "--trace-window-ms", "2")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    for key in ("ab_plain_mean_ms", "ab_windows-25_ms", "ab_windows-25_mean_ms",
                "ab_windows-min-gpu-off_mean_ms"):
        assert float(values[key]) > 0, values


def test_gpu_workload_prints_the_step_spread():
    result = run_mlp_on_cpu("--steps", "10")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert float(values["step_p10_ms"]) <= float(values["step_ms"]) <= float(values["step_p90_ms"])


def test_small_ops_workload_runs_under_the_floor():
    small_ops = os.path.join(os.path.dirname(WORKLOAD), "small_ops_train.py")
    result = run_with_package([PYTHON, small_ops, "--iters", "2", "--record-function-floor"])
    assert result.returncode == 0, result.stderr.decode()
    assert b"loop_seconds=" in result.stdout


def test_gpu_workload_times_blocks_in_one_process():
    result = run_mlp_on_cpu("--steps", "3", "--blocks", "3")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    blocks = [float(ms) for ms in values["block_ms"].split(",")]
    assert len(blocks) == 3
    # The cell's step is the median of the blocks' medians.
    assert float(values["step_ms"]) == pytest.approx(sorted(blocks)[1], abs=0.002)


def test_gpu_workload_times_native_regions():
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "2", "--ab-variants",
                            "native,native-gpu-off,native-no-trails")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert float(values["ab_native_ms"]) > 0 and float(values["ab_native-gpu-off_ms"]) > 0
    assert float(values["ab_native-no-trails_ms"]) > 0


def test_small_resnet_workload_runs():
    resnet = os.path.join(os.path.dirname(WORKLOAD), "small_resnet_train.py")
    result = run_with_package([PYTHON, resnet, "--iters", "2", "--cpu-clock"])
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert float(values["step_median_ms"]) > 0


def test_gpu_workload_logs_when_each_block_ran(tmp_path):
    spans = alternate_gpu_off_with_log(tmp_path, "--region-log", 2)
    assert [span["name"] for span in spans] == ["plain", "gpu-off", "plain", "gpu-off"]
    assert all(span["steps"] == 2 and span["end"] > span["start"] for span in spans)
    # One after the other, on the clock perf stamps samples with.
    assert all(a["end"] <= b["start"] for a, b in zip(spans, spans[1:]))
    import time
    assert spans[-1]["end"] <= time.clock_gettime(time.CLOCK_MONOTONIC)


def test_round_pairs_divide_each_region_by_the_plain_block_of_its_own_round():
    pairs = bench_module("round_pairs")
    # The second round ran in a phase twice as slow: pooled, the region
    # would read (10+30)/(10+20) = 1.33x; round by round it is 1.0x and 1.5x.
    steps = {"plain": [[10, 10, 11], [20, 19, 20]],
             "sampled": [[10, 9, 10], [30, 31, 30]],
             "floor+cupti": [[9, 9, 9], [20, 20, 20]]}
    assert pairs.round_ratios(steps, "sampled") == pytest.approx([1.0, 1.5])
    assert pairs.round_differences(steps, "sampled", "floor+cupti") == pytest.approx(
        [0.1, 0.5])
    assert pairs.ratio_cell([1.0, 1.5]) == "1.250x (1.125-1.375)"
    assert pairs.difference_cell([0.1, 0.5]) == "+0.300x (+0.200 to +0.400)"
    # One round: its own value three times.
    assert pairs.quartiles([1.2]) == (1.2, 1.2, 1.2)
    with pytest.raises(ValueError):
        pairs.quartiles([])
    # A log whose blocks do not pair up is refused, not truncated.
    with pytest.raises(ValueError, match="2 plain blocks but 1 of sampled"):
        pairs.round_ratios({"plain": [[1], [1]], "sampled": [[1]]}, "sampled")


def test_in_process_round_rows_pair_regions_with_floors_and_other_profilers():
    bench = bench_module("in_process")
    steps = {"plain": [[10], [10], [20]], "floor+cupti": [[12], [12], [24]],
             "sampled": [[14], [13], [28]], "proton": [[15], [16], [30]]}
    ratios, differences = bench.round_rows("mlp", steps, ["floor+cupti", "sampled", "proton"])
    assert ratios == ("| mlp | 3 | 1.200x (1.200-1.200) | 1.400x (1.350-1.400) "
                      "| 1.500x (1.500-1.550) |")
    assert differences == [
        "| mlp | sampled | floor+cupti | +0.200x (+0.150 to +0.200) |",
        "| mlp | sampled | proton | -0.100x (-0.200 to -0.100) |",
    ]


def test_in_process_round_rows_compare_native_regions_with_and_without_trails():
    bench = bench_module("in_process")
    steps = {"plain": [[10], [10], [20]], "native": [[13], [12], [26]],
             "native-no-trails": [[14], [14], [27]]}
    _, differences = bench.round_rows("mlp", steps, ["native", "native-no-trails"])
    assert differences == ["| mlp | native | native-no-trails | -0.100x (-0.150 to -0.075) |"]
    _, differences = bench.round_rows("mlp", steps, ["native"])
    assert differences == []


def test_gpu_overhead_in_process_prints_the_rounds_table():
    script = os.path.join(BENCH, "gpu_overhead.py")
    result = run_with_package([PYTHON, script, "--in-process", "2", "--models", "mlp",
                               "--steps", "2", "--device", "cpu", "--variants",
                               "floor,gpu-off", "--python", PYTHON, "--build", BUILD])
    output = result.stdout.decode()
    assert result.returncode == 0, output + result.stderr.decode()
    assert "| model | rounds | region floor | region gpu-off |" in output
    row = [line for line in output.splitlines() if line.startswith("| mlp | 2 | ")]
    assert len(row) == 1 and row[0].count("x (") == 2, output
    assert [line for line in output.splitlines()
            if line.startswith("| mlp | gpu-off | floor | ")], output


def test_round_pairs_spread_cells_give_the_median_then_lowest_and_highest():
    pairs = bench_module("round_pairs")
    assert pairs.spread_cell([1.30, 1.25, 1.43]) == "1.300x (1.250-1.430)"
    assert pairs.difference_spread_cell([0.01, -0.12, 0.07, 0.03]) == (
        "+0.020x (-0.120 to +0.070)")
    with pytest.raises(ValueError):
        pairs.spread_cell([])
    with pytest.raises(ValueError):
        pairs.difference_spread_cell([])


def test_in_process_rows_over_processes_take_each_process_round_median():
    bench = bench_module("in_process")
    # Three rounds per process. The second process ran in a slower phase
    # throughout: its plain steps as much as its regions, so its ratios
    # read as the first's would, but for one slow native round.
    first = {"plain": [[10], [10], [10]], "sampled": [[12], [13], [12]],
             "native": [[13], [13], [12]]}
    second = {"plain": [[20], [20], [20]], "sampled": [[26], [24], [24]],
              "native": [[24], [30], [26]]}
    ratios, differences = bench.over_processes_rows("mlp", [first, second],
                                                    ["sampled", "native"])
    # Round medians: sampled 1.2 and 1.2, native 1.3 and 1.3.
    assert ratios == "| mlp | 2 | 1.200x (1.200-1.200) | 1.300x (1.300-1.300) |"
    assert differences == []
    floors = {"plain": [[10], [10]], "floor+cupti": [[12], [12]], "sampled": [[13], [14]]}
    ratios, differences = bench.over_processes_rows(
        "mlp", [floors, {"plain": [[10], [10]], "floor+cupti": [[12], [13]],
                         "sampled": [[12], [15]]}], ["floor+cupti", "sampled"])
    # Per process, the median of the rounds' differences: +0.15 and +0.10.
    assert differences == ["| mlp | sampled | floor+cupti | +0.125x (+0.100 to +0.150) |"]


def test_gpu_overhead_in_process_over_several_processes():
    script = os.path.join(BENCH, "gpu_overhead.py")
    result = run_with_package([PYTHON, script, "--in-process", "1", "--processes", "2",
                               "--models", "mlp", "--steps", "2", "--device", "cpu",
                               "--variants", "floor,gpu-off", "--python", PYTHON,
                               "--build", BUILD])
    output = result.stdout.decode()
    assert result.returncode == 0, output + result.stderr.decode()
    lines = output.splitlines()
    # A row per process in the round-by-round table, then one over both.
    assert [line for line in lines if line.startswith("| mlp #1 | 1 | ")], output
    assert [line for line in lines if line.startswith("| mlp #2 | 1 | ")], output
    assert "| model | processes | region floor | region gpu-off |" in output
    over = [line for line in lines if line.startswith("| mlp | 2 | ")]
    assert len(over) == 1 and over[0].count("x (") == 2, output
    assert [line for line in lines if line.startswith("| mlp | gpu-off | floor | ")], output
    refused = run_with_package([PYTHON, script, "--in-process", "1", "--processes", "0"])
    assert refused.returncode != 0
    assert b"--processes: must be 1 or more" in refused.stderr, refused.stderr
    # Processes of the separate-process comparisons are --repeats.
    refused = run_with_package([PYTHON, script, "--processes", "2", "--models", "mlp"])
    assert refused.returncode != 0
    assert b"--processes needs --in-process" in refused.stderr, refused.stderr


def test_in_process_round_rows_compare_trace_windows_by_their_mean_step():
    bench = bench_module("in_process")
    # One traced step in four: the median step is an untraced one (1.0x),
    # the mean counts the traced step (13/10).
    steps = {"plain": [[10, 10, 10, 10]], "windows-25": [[10, 10, 10, 22]]}
    ratios, differences = bench.round_rows("mlp", steps, ["windows-25"])
    assert ratios == "| mlp | 1 | 1.300x (1.300-1.300) |"
    assert differences == []
