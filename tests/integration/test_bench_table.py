"""bench/gpu_overhead.py --table (bench/overhead_table.py, bench_process.py):
its columns, cells and notes, on recorded numbers."""

import pytest

from bench_scripts import WORKLOAD, bench_module
from conftest import PYTHON


def test_gpu_table_columns_keep_no_profiler_first_and_table_order():
    bench = bench_module("overhead_table")
    assert bench.table_columns("") == bench.TABLE_COLUMNS
    assert bench.table_columns("Proton,deepcontext run,run --native") == (
        "no profiler", "deepcontext run", "run --native", "Proton (context=python)")
    # "run" alone is "deepcontext run" (the shortest title it starts or ends).
    assert bench.table_columns("run") == ("no profiler", "deepcontext run")
    with pytest.raises(SystemExit):
        bench.table_columns("perf")


def test_gpu_table_names_each_process_median_step_in_run_order():
    bench = bench_module("overhead_table")
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
    bench = bench_module("overhead_table")
    # Round 2's processes both ran in a slow phase: against its own plain
    # process the profiled one added as much as in the other rounds.
    plain = [(10.0, 10.1, 900), (12.0, 12.2, 900), (8.0, 8.1, 900)]
    profiled = [(13.0, 13.1, 940), (15.0, 15.3, 940), (10.0, 10.2, 940)]
    assert bench.ratio_cell(plain, profiled) == "1.300x (1.25\u20131.30)"
    # A column that failed after its first round pairs only that round.
    assert bench.ratio_cell(plain, profiled[:1]) == "1.300x"
    assert bench.ratio_cell(plain[:1], profiled[:1]) == "1.300x"


def test_triton_attribution_needs_the_launch_line_innermost(monkeypatch):
    bench = bench_module("overhead_table")
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


def test_gpu_table_cell_past_its_timeout_is_killed(tmp_path):
    import time
    bench = bench_module("bench_process")
    started = time.time()
    with pytest.raises(bench.CellTimeout):
        bench.measure([PYTHON, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert time.time() - started < 30
    # A cell within its time gives its numbers.
    step, mean, rss, _ = bench.measure(
        [PYTHON, "-c", "print('step_ms=2.0 step_mean_ms=2.5')"], timeout=30)
    assert (step, mean) == (2.0, 2.5) and rss > 0



def test_gpu_table_floor_column_runs_the_workload_under_the_interfaces_alone():
    import argparse
    import os
    bench = bench_module("overhead_table")
    assert bench.table_columns("floor,run") == (
        "no profiler", bench.FLOOR_COLUMN, "deepcontext run")
    args = argparse.Namespace(python="py", steps=20, warmup=3, device="cuda", blocks=1,
                              launches=5000, build="/b")
    commands, _, environments = bench.table_commands(args, "/b/bin/deepcontext", "mlp", "/w")
    floor = commands[bench.FLOOR_COLUMN]
    assert floor[:3] == ["py", WORKLOAD, "--model"]
    assert floor[-2:] == ["--floor", "floor+cupti"]
    # Its process imports the build's package (cupti_floor.py finds
    # lib/libdc_cupti_floor.so through it); every other cell inherits the
    # environment as it is.
    path = environments[bench.FLOOR_COLUMN]["PYTHONPATH"].split(os.pathsep)
    assert path[0] == "/b/python"
    assert set(environments) == {bench.FLOOR_COLUMN}
    assert commands["no profiler"] == floor[:-2]


def test_gpu_table_gives_each_deepcontext_column_less_the_floor_round_by_round():
    bench = bench_module("overhead_table")
    # Round 2 ran in a slow phase: within the round the profiler added as
    # much to the floor as in the others.
    plain = [(10.0, 10.1, 900), (12.0, 12.2, 900), (8.0, 8.1, 900)]
    floor = [(12.0, 12.1, 920), (14.4, 14.5, 920), (9.6, 9.7, 920)]
    profiled = [(13.0, 13.1, 940), (15.6, 15.8, 940), (10.4, 10.5, 940)]
    # Medians 10.0 / 12.0 / 13.0: +0.100x; rounds +0.100, +0.100, +0.100.
    assert bench.over_floor_cell(plain, floor, profiled) == "+0.100x (+0.100 to +0.100)"
    faster = [(11.5, 11.6, 940), (15.0, 15.1, 940), (9.2, 9.3, 940)]
    # Below the floor in the first and third rounds, above it in the second.
    assert bench.over_floor_cell(plain, floor, faster) == "-0.050x (-0.050 to +0.050)"
    assert bench.over_floor_cell(plain[:1], floor[:1], profiled[:1]) == "+0.100x"
