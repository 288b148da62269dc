"""The benchmark workloads run (on the CPU here; bench/ runs them on GPUs)."""

import os
import re
import sys

import pytest

from conftest import BUILD, PYTHON, run_with_package

WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                        "workloads", "gpu_models.py")
BENCH = os.path.normpath(os.path.join(os.path.dirname(WORKLOAD), ".."))


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
    bench = _bench_module("gpu_overhead")
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


def test_in_process_compares_gpu_tracing_regions_with_other_profilers():
    bench = _bench_module("gpu_overhead")
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
    bench = _bench_module("gpu_overhead")
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
    bench = _bench_module("gpu_overhead")
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


def _bench_module(name):
    """A module of bench/ (they import each other by name, as the scripts
    run from there do)."""
    import importlib
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    return importlib.import_module(name)


def test_gpu_table_columns_keep_no_profiler_first_and_table_order():
    bench = _bench_module("overhead_table")
    assert bench.table_columns("") == bench.TABLE_COLUMNS
    assert bench.table_columns("Proton,deepcontext run,run --native") == (
        "no profiler", "deepcontext run", "run --native", "Proton (context=python)")
    # "run" alone is "deepcontext run" (the shortest title it starts or ends).
    assert bench.table_columns("run") == ("no profiler", "deepcontext run")
    with pytest.raises(SystemExit):
        bench.table_columns("perf")


def test_gpu_table_names_each_process_median_step_in_run_order():
    bench = _bench_module("overhead_table")
    # Two processes per cell, the second plain one in a slow mode; a column
    # that did not run is left out.
    cells = {"no profiler": [(33.5, 33.9, 900), (38.61, 39.0, 900)],
             "deepcontext run": [(40.9, 41.0, 940), (33.6, 34.0, 940)],
             "run --native": []}
    assert bench.per_process_steps(
        "resnet50", cells, ("no profiler", "deepcontext run", "run --native")) == (
        "resnet50, median step of each process (ms): no profiler 33.50, 38.61; "
        "deepcontext run 40.90, 33.60")


def test_gpu_table_cell_gives_the_range_of_each_round_against_its_plain_process():
    bench = _bench_module("overhead_table")
    # Round 2's processes both ran in a slow phase: against its own plain
    # process the profiled one added as much as in the other rounds.
    plain = [(10.0, 10.1, 900), (12.0, 12.2, 900), (8.0, 8.1, 900)]
    profiled = [(13.0, 13.1, 940), (15.0, 15.3, 940), (10.0, 10.2, 940)]
    assert bench.ratio_cell(plain, profiled) == "1.300x (1.25\u20131.30)"
    # A column that failed after its first round pairs only that round.
    assert bench.ratio_cell(plain, profiled[:1]) == "1.300x"
    assert bench.ratio_cell(plain[:1], profiled[:1]) == "1.300x"


def test_triton_attribution_needs_the_launch_line_innermost(monkeypatch):
    bench = _bench_module("overhead_table")
    line = next(number for number, text in enumerate(open(WORKLOAD), start=1)
                if "# TRITON_LAUNCH_LINE" in text)
    launch = {"kind": "python", "file": "/x/gpu_models.py", "line": line, "parent": None}
    driver = {"kind": "python", "file": "/t/triton/backends/nvidia/driver.py", "line": 9,
              "parent": 0}
    # One kernel right under the launch line (through an op node), one under
    # Triton's launcher below it.
    nodes = [launch, driver,
             {"kind": "operator", "name": "aten::x", "parent": 0},
             {"kind": "gpu_kernel", "name": "add_one_kernel", "parent": 2,
              "exclusive": {"gpu_time": {"count": 3}}},
             {"kind": "gpu_kernel", "name": "add_one_kernel", "parent": 1,
              "exclusive": {"gpu_time": {"count": 4}}}]
    monkeypatch.setattr(bench, "run", lambda command: __import__("json").dumps(
        {"nodes": nodes}))
    assert bench.triton_attribution("deepcontext", "p.dctx") == (3, 7)


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
                            "native,native-gpu-off")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert float(values["ab_native_ms"]) > 0 and float(values["ab_native-gpu-off_ms"]) > 0


def test_gpu_table_cell_past_its_timeout_is_killed(tmp_path):
    import time
    bench = _bench_module("bench_process")
    started = time.time()
    with pytest.raises(bench.CellTimeout):
        bench.measure([PYTHON, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert time.time() - started < 30
    # A cell within its time gives its numbers.
    step, mean, rss, _ = bench.measure(
        [PYTHON, "-c", "print('step_ms=2.0 step_mean_ms=2.5')"], timeout=30)
    assert (step, mean) == (2.0, 2.5) and rss > 0


def test_small_resnet_workload_runs():
    resnet = os.path.join(os.path.dirname(WORKLOAD), "small_resnet_train.py")
    result = run_with_package([PYTHON, resnet, "--iters", "2", "--cpu-clock"])
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert float(values["step_median_ms"]) > 0


def test_callgrind_totals_sum_functions_by_object_and_find_the_runtime():
    bench = _bench_module("op_path_callgrind")
    # callgrind_annotate's lines: nine event counts with percentages, "."
    # for zero, then file:function [object].
    annotated = "\n".join([
        "Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw",
        " 1,000 (10.0%)  200 ( 2.0%)  100 ( 1.0%)  30 ( 3.0%)  9 ( 0.9%)  4 ( 0.4%)"
        "  .  .  .  /src/op_metrics.cc:deepcontext::OpMetrics::Exit(dlmonitor_event const&)"
        " [/b/lib/libdeepcontext.so]",
        "   500 ( 5.0%)  100 ( 1.0%)   50 ( 0.5%)  10 ( 1.0%)  1 ( 0.1%)  .  .  .  .  "
        "???:(anonymous namespace)::Emit(at::RecordFunction const&) "
        "[/root/.cache/deepcontext/uid-0/torch-adapter/torch-2.11.0-abi1-0123abcd.so]",
        "   700 ( 7.0%)  100 ( 1.0%)   50 ( 0.5%)  20 ( 2.0%)  2 ( 0.2%)  .  .  .  .  "
        "/src/call_path_builder.cc:CallPathBuilder::OnOpEnter(dlmonitor_op_data const&)"
        " [/b/lib/libdeepcontext.so]",
        " 9,000 (90.0%) 1,000 (10.0%) 500 ( 5.0%) 300 (30.0%) 90 ( 9.0%)  .  .  .  .  "
        "./malloc/malloc.c:malloc [/usr/lib/x86_64-linux-gnu/libc.so.6]",
        # Code inlined from a header: no object, charged to the function's.
        "   300 ( 3.0%)  100 ( 1.0%)  .  6 ( 0.6%)  8 ( 0.8%)  .  .  .  .  "
        "/src/object_access.h:CallPathBuilder::OnOpEnter(dlmonitor_op_data const&)",
        "    40 ( 0.4%)  .  .  .  .  .  .  .  .  /src/x.h:NeverListed(int)",
        # A call line repeats its callee's cost.
        "   700 ( 7.0%)  100 ( 1.0%)   50 ( 0.5%)  20 ( 2.0%)  2 ( 0.2%)  .  .  .  .  "
        "=> /src/call_path_builder.cc:CallPathBuilder::OnOpEnter(dlmonitor_op_data const&) (3x)",
        "10,000 (100.0%) 1,400 (100.0%) 700 (100.0%) 360 (100.0%) 102 (100.0%) 4 (100.0%)"
        "  .  .  .  PROGRAM TOTALS",
    ])
    totals = bench.object_totals(annotated)
    assert totals["libdeepcontext.so"][:5] == [2000, 400, 150, 56, 19]
    assert totals["?"][0] == 40
    assert totals["libc.so.6"][0] == 9000
    assert sorted(name for name in totals if bench.is_runtime(name)) == [
        "libdeepcontext.so", "torch-2.11.0-abi1-0123abcd.so"]
    assert not bench.is_runtime("libtorch_cpu.so.2.11")


def test_callgrind_around_divides_the_extra_steps_by_their_ops():
    bench = _bench_module("op_path_callgrind")
    width = len(bench.EVENTS)

    def values(ir, i1mr):
        row = [0] * width
        row[bench.EVENTS.index("Ir")] = ir
        row[bench.EVENTS.index("I1mr")] = i1mr
        return row

    short = {"libtorch_cpu.so": values(1000, 100), "libdeepcontext.so": values(50, 5)}
    long = {"libtorch_cpu.so": values(3000, 500), "libdeepcontext.so": values(250, 45),
            "torch-2.11.0-abi1-0123abcd.so": values(40, 2)}
    per_op = bench.per_op_of_extra_steps(short, long, ops=10)
    assert per_op["libtorch_cpu.so"][:4] == [200, 0, 0, 40]
    assert per_op["torch-2.11.0-abi1-0123abcd.so"][0] == 4

    floor = {"libtorch_cpu.so": values(180, 30), "libc.so.6": values(10, 1),
             "python3.12": values(90, 5)}
    rows = bench.around_rows(floor, per_op, objects=1)
    names = [name for name, _, _ in rows]
    # The runtime (library and adapter together), the busiest other object,
    # then every other object summed.
    assert names == ["runtime", "libtorch_cpu.so", "all other objects"]
    runtime = rows[0]
    assert runtime[1][0] == 0 and runtime[2][0] == 24 and runtime[2][3] == 4.2
    others = rows[2]
    assert others[1][0] == 280 and others[2][0] == 200
    assert others[1][3] == 36 and others[2][3] == 40


def test_runtime_samples_parse_perf_reports_and_find_the_runtime():
    bench = _bench_module("runtime_samples")
    # `perf report --stdio -n -t '\t' --sort comm,dso`: percent, samples,
    # thread name, object, each column padded.
    by_thread = bench.samples_by_thread_and_dso("\n".join([
        "# Samples: 11K of event 'cpu-clock'",
        "#",
        "# Overhead\t     Samples\tCommand    \tShared Object   ",
        " 13.67% \t 1767       \tpython3    \tlibtorch_cpu.so  ",
        " 4.03%  \t 521        \tpython3    \tlibdeepcontext.so  ",
        " 1.00%  \t 130        \tpt_autograd_0\t/b/lib/libdeepcontext.so  ",
        " 0.50%  \t 64         \tdc-cpu-sampler\tlibdeepcontext.so  ",
        " 0.40%  \t 52         \tdc-gpu-records\tlibdeepcontext.so  ",
        " 0.18%  \t 20         \tpython3    \ttorch-2.11.0_cu130-abi1-43e47e71e1d1f04e.so  ",
        " 3.14%  \t 406        \tpython3    \tlibcupti.so.13  ",
        " 1.41%  \t 182        \tdc-gpu-records\t[kernel.kallsyms]  ",
        "",
    ]))
    assert by_thread[(False, "libdeepcontext.so")] == 521 + 130
    assert by_thread[(True, "libdeepcontext.so")] == 64 + 52
    assert by_thread[(True, "[kernel.kallsyms]")] == 182
    assert bench.summarize(by_thread) == (
        521 + 130 + 20, 64 + 52, 406, 1767 + 521 + 130 + 64 + 52 + 20 + 406 + 182)
    # Every object on the application's threads; the profiler's own left out.
    assert bench.application_libraries(by_thread) == {
        "libtorch_cpu.so": 1767, "libdeepcontext.so": 521 + 130,
        "torch-2.11.0_cu130-abi1-43e47e71e1d1f04e.so": 20, "libcupti.so.13": 406}
    # `--sort comm,dso,sym`: the runtime's functions only, summed by name,
    # apart for the application's threads and the profiler's.
    symbols = bench.runtime_symbols("\n".join([
        " 0.67%  \t 76   \tpython3    \tlibdeepcontext.so  \t[.] deepcontext::python::Walk",
        " 0.54%  \t 61   \tpython3    \tlibdeepcontext.so  \t[.] "
        "deepcontext::profiler::OpMetrics::Exit",
        " 0.20%  \t 23   \tpt_autograd_0\tlibdeepcontext.so  \t[.] "
        "deepcontext::profiler::OpMetrics::Exit",
        " 0.10%  \t 12   \tdc-cpu-sampler\tlibdeepcontext.so  \t[.] "
        "deepcontext::profiler::MetricStore::Add",
        " 0.05%  \t 6    \tpython3    \tlibdeepcontext.so  \t[.] "
        "deepcontext::profiler::MetricStore::Add",
        " 0.18%  \t 20   \tpython3    \ttorch-2.11.0_cu130-abi1-43e47e71e1d1f04e.so  \t[.] "
        "(anonymous namespace)::Emit",
        " 2.57%  \t 293  \tpython3    \tpython3.12  \t[.] _PyEval_EvalFrameDefault",
    ]))
    assert symbols == {"deepcontext::python::Walk": [76, 0],
                       "deepcontext::profiler::OpMetrics::Exit": [84, 0],
                       "deepcontext::profiler::MetricStore::Add": [6, 12],
                       "(anonymous namespace)::Emit": [20, 0]}
    assert bench.STEP.findall("model=mlp steps=300 step_ms=16.023 step_p10_ms=12.3") == ["16.023"]
    # Every object's functions on the application's threads, for --grown.
    every = bench.application_symbols("\n".join([
        " 0.67%  \t 76   \tpython3    \t/b/lib/libdeepcontext.so  \t[.] deepcontext::python::Walk",
        " 0.10%  \t 12   \tdc-cpu-sampler\tlibdeepcontext.so  \t[.] MetricStore::Add",
        " 2.57%  \t 293  \tpython3    \tpython3.12  \t[.] _PyEval_EvalFrameDefault",
        " 0.30%  \t 7    \tpt_autograd_0\tpython3.12  \t[.] _PyEval_EvalFrameDefault",
    ]))
    assert every == {("libdeepcontext.so", "deepcontext::python::Walk"): 76,
                     ("python3.12", "_PyEval_EvalFrameDefault"): 300}


def test_runtime_samples_compare_with_processes_without_deepcontext():
    bench = _bench_module("runtime_samples")
    # Functions that grew most first; a function only the reference runs
    # shrank and comes last.
    reference = {("libtorch_cpu.so", "at::add"): 100, ("libcuda.so", "cuLaunch"): 50,
                 ("python3.12", "gone"): 5}
    profiled = {("libtorch_cpu.so", "at::add"): 130, ("libcuda.so", "cuLaunch"): 50,
                ("libdeepcontext.so", "Enter"): 40}
    assert bench.grown_functions(profiled, reference, 3) == [
        ("libdeepcontext.so", "Enter", 0, 40), ("libtorch_cpu.so", "at::add", 100, 130),
        ("libcuda.so", "cuLaunch", 50, 50)]
    assert bench.grown_functions(profiled, reference, 10)[-1] == ("python3.12", "gone", 5, 0)
    # Between two builds: the largest differences either way first.
    assert bench.changed_functions(profiled, reference, 3) == [
        ("libdeepcontext.so", "Enter", 40, 0), ("libtorch_cpu.so", "at::add", 130, 100),
        ("python3.12", "gone", 0, 5)]
    # Objects by their busiest column, so that one only a reference spends
    # in is listed too.
    assert bench.ranked_objects([{"a": 10, "b": 3}, {"b": 20, "c": 1}], 2) == ["b", "a"]
    # A reference runs the workload itself: plain, or under a floor.
    class Args:
        python, model, steps, device, native = "py", "mlp", 7, "cuda", True
    plain = bench.workload_command(("reference", "plain"), Args, "/o.dctx")
    assert plain[:2] == ["py", bench.WORKLOAD] and "--floor" not in plain
    floor = bench.workload_command(("reference", "floor+cupti"), Args, "/o.dctx")
    assert floor[-2:] == ["--floor", "floor+cupti"]
    profiled_command = bench.workload_command("/b", Args, "/o.dctx")
    assert profiled_command[:3] == ["/b/bin/deepcontext", "run", "--native"]
    assert profiled_command[profiled_command.index("--") + 1:] == plain


def test_gpu_workload_logs_when_each_block_ran(tmp_path):
    spans = alternate_gpu_off_with_log(tmp_path, "--region-log", 2)
    assert [span["name"] for span in spans] == ["plain", "gpu-off", "plain", "gpu-off"]
    assert all(span["steps"] == 2 and span["end"] > span["start"] for span in spans)
    # One after the other, on the clock perf stamps samples with.
    assert all(a["end"] <= b["start"] for a, b in zip(spans, spans[1:]))
    import time
    assert spans[-1]["end"] <= time.clock_gettime(time.CLOCK_MONOTONIC)


def test_region_samples_charge_each_sample_to_its_block():
    bench = _bench_module("region_samples")
    # `perf script -F comm,tid,time,ip,sym,dso`: names with spaces and
    # parentheses, a thread name with a space, unknown symbols.
    samples = bench.parse_samples("\n".join([
        "         python3 4242 100.500000:      7f00 at::native::add (/t/libtorch_cpu.so)",
        "         python3 4242 100.600000:      7f01 (anonymous namespace)::Emit "
        "(/c/torch-2.11.0-abi1-0a.so)",
        "  dc-cpu-sampler 4243 100.700000:      7f02 MetricStore::Add (/b/lib/libdeepcontext.so)",
        "   pt_autograd_0 4244 101.500000:      7f03 std::vector<int, std::allocator<int> >::push"
        " (/b/lib/libdeepcontext.so)",
        "      my thread 4245 101.600000:      7f04 [unknown] ([kernel.kallsyms])",
        "         python3 4242 102.500000:      7f05 _PyEval_EvalFrameDefault (/usr/bin/python3.12)",
        "not a sample line",
    ]))
    assert [(round(t, 1), comm, obj, sym) for t, comm, obj, sym, _ in samples] == [
        (100.5, "python3", "libtorch_cpu.so", "at::native::add"),
        (100.6, "python3", "torch-2.11.0-abi1-0a.so", "(anonymous namespace)::Emit"),
        (100.7, "dc-cpu-sampler", "libdeepcontext.so", "MetricStore::Add"),
        (101.5, "pt_autograd_0", "libdeepcontext.so",
         "std::vector<int, std::allocator<int> >::push"),
        (101.6, "my thread", "[kernel.kallsyms]", "[unknown]"),
        (102.5, "python3", "python3.12", "_PyEval_EvalFrameDefault")]
    # Without call chains nothing is known to run for the runtime.
    assert not any(for_runtime for *_, for_runtime in samples)
    regions = bench.Regions([
        {"name": "sampled", "start": 101.0, "end": 102.0, "steps": 5},
        {"name": "plain", "start": 100.0, "end": 101.0, "steps": 5},
        {"name": "plain", "start": 103.0, "end": 104.0, "steps": 5},
    ])
    assert regions.steps() == {"plain": 10, "sampled": 5}
    assert regions.name_at(99.0) is None and regions.name_at(102.5) is None
    per_region = bench.charge(samples, regions)
    # The sample between blocks (102.5) is dropped; the profiler's thread
    # is counted apart; the runtime's objects include the torch adapter.
    assert sorted(per_region) == ["plain", "sampled"]
    assert per_region["plain"]["objects"] == {"libtorch_cpu.so": 1, "torch-2.11.0-abi1-0a.so": 1}
    assert per_region["plain"]["runtime"] == 1 and per_region["plain"]["profiler"] == 1
    assert per_region["sampled"]["functions"] == {
        ("libdeepcontext.so", "std::vector<int, std::allocator<int> >::push"): 1,
        ("[kernel.kallsyms]", "[unknown]"): 1}
    assert per_region["sampled"]["calls"] == 0 and per_region["sampled"]["called"] == {}
    # DeepContext's first region against the one before it.
    assert bench.comparison_pair(["plain", "floor+cupti", "sampled", "native"]) == (
        "floor+cupti", "sampled")
    assert bench.comparison_pair(["plain", "sampled"]) == ("plain", "sampled")
    assert bench.comparison_pair(["plain", "floor", "proton"]) is None
    # Or the two regions --compare names, in its order.
    names = ["plain", "floor+cupti", "sampled", "native"]
    assert bench.compared_regions(names, None) == ("floor+cupti", "sampled")
    assert bench.compared_regions(names, "native,sampled") == ("native", "sampled")
    for wrong in ("sampled", "sampled,proton", "sampled,sampled", "plain,sampled,native"):
        with pytest.raises(ValueError, match="--compare takes two different regions"):
            bench.compared_regions(names, wrong)


def test_region_samples_say_when_recording_ended_and_how_long_reading_took(tmp_path):
    # A perf that runs the workload without sampling and reads back no
    # samples: the run goes through, and stderr says where it got to (a run
    # stopped by a time limit while reading back shows that much).
    import subprocess
    perf = tmp_path / "perf"
    perf.write_text("""#!/bin/sh
if [ "$1" = record ]; then
  while [ "$1" != -- ]; do
    if [ "$1" = -o ]; then head -c 2000000 /dev/zero > "$2"; fi
    shift
  done
  shift
  exec "$@"
fi
""")
    perf.chmod(0o755)
    script = os.path.join(BENCH, "region_samples.py")
    result = subprocess.run([PYTHON, script, "--build", BUILD, "--model", "mlp", "--device",
                             "cpu", "--steps", "2", "--rounds", "1", "--variants", "sampled",
                             "--perf", str(perf), "--python", PYTHON],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    stderr = result.stderr.decode()
    assert re.search(r"recorded 2 MB of samples in \d+ s; reading them back", stderr), stderr
    assert re.search(r"read them back in \d+ s", stderr), stderr
    assert "| sampled |" in result.stdout.decode()


def test_region_samples_charge_what_the_runtime_calls_to_it():
    """With call chains (--callers), a sample in the C library, the vDSO, the
    loader or the kernel that the runtime reached through such helpers only,
    or in a framework function its adapter called, runs on the runtime's
    behalf; the same functions reached from the framework's own code do
    not."""
    bench = _bench_module("region_samples")
    script = "\n".join([
        # A clock read: vDSO <- libc <- the runtime (an inlined frame first).
        "python3 4242 100.100000: ",
        "\t             7bd [unknown] ([vdso])",
        "\t           d1f00 __GI___clock_gettime (inlined)",
        "\t           d1f00 clock_gettime@@GLIBC_2.17 (/usr/lib/x86_64-linux-gnu/libc.so.6)",
        "\t           5a000 deepcontext::profiler::OpMetrics::Exit (/b/lib/libdeepcontext.so)",
        "\t           5b000 dlmonitor_event_emit (/b/lib/libdeepcontext.so)",
        "",
        # The adapter's call into torch.
        "python3 4242 100.200000: ",
        "\t          f00000 at::RecordFunction::name (/t/libtorch_cpu.so)",
        "\t            2404 (anonymous namespace)::Emit (/c/torch-2.11.0-abi1-0a.so)",
        "\t          f10000 at::RecordFunction::runStartCallbacks (/t/libtorch_cpu.so)",
        "",
        # torch's own allocation: libc <- libtorch, not the runtime's.
        "python3 4242 100.300000: ",
        "\t           99000 malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)",
        "\t          f20000 at::empty (/t/libtorch_cpu.so)",
        "\t            2404 (anonymous namespace)::Emit (/c/torch-2.11.0-abi1-0a.so)",
        "",
        # A page fault in the runtime's code: kernel <- the runtime.
        "python3 4242 100.400000: ",
        "\tffffffff816099e0 __handle_mm_fault ([kernel.kallsyms])",
        "\tffffffff81000c82 asm_exc_page_fault ([kernel.kallsyms])",
        "\t           5c000 deepcontext::dlmonitor::CallPathBuilder::OnOpEnter "
        "(/b/lib/libdeepcontext.so)",
        "",
        # In the runtime itself: counted as the runtime, not as its calls.
        "python3 4242 100.500000: ",
        "\t           5a000 deepcontext::profiler::OpMetrics::Exit (/b/lib/libdeepcontext.so)",
        "\t            2404 (anonymous namespace)::Emit (/c/torch-2.11.0-abi1-0a.so)",
        "",
        # Helpers all the way down: no caller known.
        "python3 4242 100.600000: ",
        "\t           99000 malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)",
        "\t           1ab77 _start (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)",
        "",
        "  dc-cpu-sampler 4243 100.700000: ",
        "\t           99000 malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)",
        "\t           5d000 deepcontext::profiler::MetricStore::Add (/b/lib/libdeepcontext.so)",
    ])
    samples = bench.parse_samples(script)
    assert [(round(t, 1), obj, sym, for_runtime) for t, _, obj, sym, for_runtime in samples] == [
        (100.1, "[vdso]", "[unknown]", True),
        (100.2, "libtorch_cpu.so", "at::RecordFunction::name", True),
        (100.3, "libc.so.6", "malloc", False),
        (100.4, "[kernel.kallsyms]", "__handle_mm_fault", True),
        (100.5, "libdeepcontext.so", "deepcontext::profiler::OpMetrics::Exit", False),
        (100.6, "libc.so.6", "malloc", False),
        (100.7, "libc.so.6", "malloc", True)]
    regions = bench.Regions([{"name": "sampled", "start": 100.0, "end": 101.0, "steps": 2}])
    entry = bench.charge(samples, regions)["sampled"]
    assert entry["runtime"] == 1 and entry["calls"] == 3 and entry["profiler"] == 1
    assert entry["called"] == {("[vdso]", "[unknown]"): 1,
                               ("libtorch_cpu.so", "at::RecordFunction::name"): 1,
                               ("[kernel.kallsyms]", "__handle_mm_fault"): 1}
