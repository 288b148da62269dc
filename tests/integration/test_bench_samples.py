"""The benchmarks that count where a step's CPU goes (bench/op_path_callgrind.py,
runtime_samples.py, region_samples.py): their parsing and arithmetic on
recorded tool output, and region_samples end to end with a stand-in perf."""

import os
import re

import pytest

from bench_scripts import BENCH, bench_module
from conftest import BUILD, PYTHON


def test_callgrind_totals_sum_functions_by_object_and_find_the_runtime():
    bench = bench_module("op_path_callgrind")
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


def test_callgrind_lines_counts_the_code_lines_a_call_runs_on(tmp_path):
    lines = bench_module("callgrind_lines")
    # Compressed as callgrind writes it: names by id, positions relative to
    # the previous line's, a call's inclusive cost (after calls=) that is
    # not the caller's own, and another object's function left out.
    path = tmp_path / "callgrind.1"
    path.write_text("""version: 1
positions: instr line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
ob=(1) /x/lib/libdeepcontext.so
fl=(1) walk.cc
fn=(1) Walk(int)
0x1000 10 10 0 0 3 0 0 0 0 0
+8 +1 10 0 0 2 0 0 0 0 0
+56 * 10 0 0 0 0 0 0 0 0
cob=(2) /lib/libc.so.6
cfn=(2) memcpy
calls=10 0x9000 0
+4 * 500 0 0 0 0 0 0 0 0
* * 10 0 0 1 0 0 0 0 0
+64 +2 1 0 0 1 0 0 0 0 0
fn=(3) Rare()
0x2000 5 5 0 0 5 0 0 0 0 0
ob=(2)
fn=(2)
0x9000 1 500 0 0 0 0 0 0 0 0
""")
    costs = lines.instruction_costs(str(path), "libdeepcontext.so")
    assert set(costs) == {"Walk(int)", "Rare()"}
    walk = costs["Walk(int)"]
    # Every call ran 0x1000 to the call at 0x1044 (whose inclusive 500
    # are memcpy's), one call in ten went on to 0x1084.
    assert walk == {0x1000: [10, 3], 0x1008: [10, 2], 0x1040: [10, 0], 0x1044: [10, 1],
                    0x1084: [1, 1]}
    rows = {row[0]: row[1:] for row in lines.line_rows(
        costs, {"Walk(int)": 0x1000, "Rare()": 0x2000, "Unused()": 0x3000})}
    # Three lines: two that every call runs on, one in ten calls.
    calls, lines_run, touched, misses = rows["Walk(int)"]
    assert (calls, lines_run) == (10, 3)
    assert touched == pytest.approx(2.1)
    assert misses == pytest.approx(0.7)
    assert rows["Rare()"] == (5, 1, 1.0, 1.0)
    table = lines.lines_table(lines.line_rows(costs, {"Walk(int)": 0x1000, "Rare()": 0x2000}),
                              1)
    # The most misses in all first: Walk's 7, then Rare's 5.
    assert table.splitlines()[2] == "| Walk(int) | 10 | 3 | 2.1 | 0.7 |"
    assert len(table.splitlines()) == 3


def test_callgrind_lists_the_runtimes_busiest_functions_per_op():
    bench = bench_module("op_path_callgrind")
    annotated = "\n".join([
        " 1,000 (10.0%)  200  100  30  9  4  .  .  .  /src/op_metrics.cc:"
        "deepcontext::OpMetrics::Exit(dlmonitor_event const&) [/b/lib/libdeepcontext.so]",
        "   700 ( 7.0%)  100   50  20  2  .  .  .  .  /src/call_path_builder.cc:"
        "CallPathBuilder::OnOpEnter(dlmonitor_op_data const&) [/b/lib/libdeepcontext.so]",
        # Inlined from a header into OnOpEnter: joins its line.
        "   600 ( 6.0%)  100  .  6  8  .  .  .  .  /src/object_access.h:"
        "CallPathBuilder::OnOpEnter(dlmonitor_op_data const&)",
        "   500 ( 5.0%)  100   50  10  1  .  .  .  .  ???:(anonymous namespace)::Emit("
        "at::RecordFunction const&) [/c/torch-adapter/torch-2.11.0-abi1-0123abcd.so]",
        " 9,000 (90.0%) 1,000 500 300 90  .  .  .  .  ./malloc/malloc.c:malloc "
        "[/usr/lib/x86_64-linux-gnu/libc.so.6]",
        "   700 ( 7.0%)  100   50  20  2  .  .  .  .  => /src/call_path_builder.cc:"
        "CallPathBuilder::OnOpEnter(dlmonitor_op_data const&) (3x)",
    ])
    functions = bench.runtime_function_totals(annotated)
    assert sorted(functions) == [
        "(anonymous namespace)::Emit(at::RecordFunction const&)",
        "CallPathBuilder::OnOpEnter(dlmonitor_op_data const&)",
        "deepcontext::OpMetrics::Exit(dlmonitor_event const&)"]
    assert functions["CallPathBuilder::OnOpEnter(dlmonitor_op_data const&)"][:5] == [
        1300, 200, 50, 26, 10]
    # Per op (10 ops), the busiest first, cut to the count asked for.
    table = bench.function_table(functions, 10, 2).splitlines()
    assert table[0] == "| function | Ir | I1mr | D1mr | D1mw |"
    assert table[2:] == ["| CallPathBuilder::OnOpEnter | 130.0 | 2.6 | 1.0 | 0.0 |",
                         "| deepcontext::OpMetrics::Exit | 100.0 | 3.0 | 0.9 | 0.4 |"]
    # Names lose their return type, templates, parameters and clone suffixes.
    assert bench.short_function_name(
        "int ns::(anonymous namespace)::Walk<&ns::layouts::k3_11>(ns::Layout const&, int)"
    ) == "ns::(anonymous namespace)::Walk"
    assert bench.short_function_name(
        "std::vector<std::pair<int, long> >::operator=(std::vector<std::pair<int, long> > "
        "const&) [clone .isra.0]") == "std::vector::operator="
    assert bench.short_function_name("ns::Store::Find(int) const") == "ns::Store::Find"
    assert bench.short_function_name("dlmonitor_event_emit") == "dlmonitor_event_emit"


def test_callgrind_costs_a_source_file_line_by_line():
    bench = bench_module("op_path_callgrind")
    rule = "-" * 80

    def annotation(exit_ir, search_ir):
        # callgrind_annotate --auto=yes --show=Ir,I1mr,D1mr,D1mw: per file a
        # heading (with a warning when the file changed since the run),
        # the columns' names, an empty line, then stretches of the file.
        return "\n".join([
            rule,
            "-- Auto-annotated source: /work/runtime/profiler/op_metrics.cc",
            rule,
            "@@ WARNING @@ WARNING @@",
            "@ Source file '/work/runtime/profiler/op_metrics.cc' is more recent.",
            "Ir          I1mr       D1mr       D1mw       ",
            "",
            # The first stretch starts at line 1 when no "-- line" says otherwise.
            "  8 ( 0.01%)  .          .          .           // line one",
            "  .           .          .          .           ",
            "-- line 40 ----------------------------------------",
            "%d ( 1.00%%)  3 ( 0.10%%)  .          2 ( 0.02%%)  void Exit() {" % exit_ir,
            # A call line repeats its callee's cost and is no line of the file.
            "900 ( 9.00%)  9 ( 0.30%)  1 ( 0.01%)  .          => /work/x.cc:Callee() (10x)",
            "%d ( 0.20%%)  .          4 ( 0.04%%)  .             while (i > 0) --i;" % search_ir,
            "  .           .          .          .             return;",
            rule,
            "-- Auto-annotated source: /work/runtime/profiler/op_metrics.h",
            rule,
            "Ir          I1mr       D1mr       D1mw       ",
            "",
            "500 ( 5.00%)  .          .          .           int Elsewhere();",
        ])

    short = bench.source_line_costs(annotation(100, 20), "runtime/profiler/op_metrics.cc")
    assert sorted(short) == [1, 2, 40, 41, 42]
    assert short[40] == ([100, 3, 0, 2], "void Exit() {")
    assert short[41] == ([20, 0, 4, 0], "while (i > 0) --i;")
    assert short[42] == ([0, 0, 0, 0], "return;")
    assert bench.source_line_costs(annotation(100, 20), "profiler/op_metrics.h")[1][0][0] == 500
    assert bench.source_line_costs(annotation(100, 20), "other.cc") == {}

    # Per op of the extra steps (10 ops): the longer run less the shorter
    # one, lines under half an instruction and a twentieth of a miss left
    # out, and the sum of those shown.
    long = bench.source_line_costs(annotation(160, 25), "runtime/profiler/op_metrics.cc")
    table = bench.source_table(short, long, ops=10).splitlines()
    assert table[0] == "| line | Ir | I1mr | D1mr | D1mw | source |"
    assert table[2:] == ["| 40 | 6.00 | 0.00 | 0.00 | 0.00 | `void Exit() {` |",
                         "| 41 | 0.50 | 0.00 | 0.00 | 0.00 | `while (i > 0) --i;` |",
                         "| lines shown | 6.50 | 0.00 | 0.00 | 0.00 | |"]


def test_callgrind_around_divides_the_extra_steps_by_their_ops():
    bench = bench_module("op_path_callgrind")
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



def test_callgrind_profiles_with_native_frames_only_when_asked():
    bench = bench_module("op_path_callgrind")
    profiled = bench.workload_command("/b", 2, "profiled", "/o/mlp.dctx", "/py")
    native = bench.workload_command("/b", 2, "profiled", "/o/mlp.dctx", "/py", native=True)
    assert profiled[:4] == ["/b/bin/deepcontext", "run", "-o", "/o/mlp.dctx"]
    assert "--native" not in profiled
    # The flag goes to `deepcontext run`, before the workload's command.
    assert native[:6] == ["/b/bin/deepcontext", "run", "-o", "/o/mlp.dctx", "--native", "--"]
    assert native[6:] == profiled[5:]
    # The floor and plain runs have no profiler to give it to.
    floor = bench.workload_command("/b", 2, "floor", "/o/mlp.dctx", "/py", native=True)
    assert floor[0] == "/py" and floor[-2:] == ["--floor", "floor"] and "--native" not in floor
    plain = bench.workload_command("/b", 2, "plain", "/o/mlp.dctx", "/py", native=True)
    assert plain == profiled[5:]


AUDIT = os.path.join(BUILD, "lib", "libdc_rdtscp_audit.so")
FIXTURE = os.path.join(BUILD, "tests", "integration", "rdtscp_fixture",
                       "libdc_test_rdtscp_fixture.so")
# Loads the fixture, prints the first bytes of its function in hex, then
# calls it when told to.
READ_FIXTURE = """
import ctypes, sys
library = ctypes.CDLL(sys.argv[1])
function = ctypes.cast(library.dc_fixture_read_tsc, ctypes.c_void_p).value
print(ctypes.string_at(function, 64).hex())
if sys.argv[2] == "call":
    library.dc_fixture_read_tsc.restype = ctypes.c_uint64
    print(library.dc_fixture_read_tsc())
"""


def read_fixture(patch, call):
    import subprocess
    env = dict(os.environ, LD_AUDIT=AUDIT, DEEPCONTEXT_RDTSCP_PATCH=patch)
    result = subprocess.run([PYTHON, "-c", READ_FIXTURE, FIXTURE, "call" if call else "look"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


@pytest.mark.skipif(not os.path.exists(AUDIT), reason="x86-64 only (bench/rdtscp_audit.cc)")
def test_rdtscp_audit_rewrites_rdtscp_in_the_libraries_it_names():
    # Named: its RDTSCP becomes RDTSC; NOP before it runs, and still reads
    # the counter.
    code, counter = read_fixture("some-other-lib.so,rdtscp_fixture", call=True)
    assert "0f3190" in code and "0f01f9" not in code, code
    assert int(counter) > 0
    # Not named (the default names libhwy only): left as it is.
    (code,) = read_fixture("", call=False)
    assert "0f01f9" in code and "0f3190" not in code, code


def test_callgrind_loads_the_audit_only_where_the_cpu_hides_rdtscp(tmp_path):
    bench = bench_module("op_path_callgrind")
    hidden, shown = tmp_path / "hidden", tmp_path / "shown"
    hidden.write_text("processor\t: 0\nflags\t\t: fpu tsc rdrand\n")
    shown.write_text("processor\t: 0\nflags\t\t: fpu tsc rdtscp rdrand\n")
    build = tmp_path / "build"
    (build / "lib").mkdir(parents=True)
    audit = build / "lib" / "libdc_rdtscp_audit.so"
    env = {"PATH": "/usr/bin", "LD_AUDIT": "/opt/other.so"}
    # Not built (an aarch64 build): nothing to load.
    assert bench.valgrind_env(str(build), env, str(hidden)) == env
    audit.write_bytes(b"")
    assert bench.valgrind_env(str(build), env, str(shown)) == env
    assert bench.valgrind_env(str(build), env, str(hidden)) == dict(
        env, LD_AUDIT="/opt/other.so:" + str(audit))
    assert env["LD_AUDIT"] == "/opt/other.so"  # the caller's stays as it was
    assert bench.cpu_advertises_rdtscp(str(tmp_path / "missing"))

def test_runtime_samples_parse_perf_reports_and_find_the_runtime():
    bench = bench_module("runtime_samples")
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


def test_runtime_samples_share_leaves_out_the_process_speed():
    bench = bench_module("runtime_samples")
    # (runtime on application threads, on the profiler's, CUPTI, all): a
    # process twice as slow has twice the samples everywhere, the same share.
    assert bench.runtime_shares([(100, 10, 50, 2000), (200, 20, 100, 4000), (0, 0, 0, 0)]) == [
        0.05, 0.05, 0.0]


def test_runtime_samples_compare_with_processes_without_deepcontext():
    bench = bench_module("runtime_samples")
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


def test_region_samples_charge_each_sample_to_its_block():
    bench = bench_module("region_samples")
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
    script_arguments = tmp_path / "script-arguments"
    perf.write_text("""#!/bin/sh
if [ "$1" = record ]; then
  while [ "$1" != -- ]; do
    if [ "$1" = -o ]; then head -c 2000000 /dev/zero > "$2"; fi
    shift
  done
  shift
  exec "$@"
fi
echo "$@" > %s
""" % script_arguments)
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
    # Read back without resolving inlined functions: 30 times faster, and
    # every frame keeps its object.
    assert script_arguments.read_text().split()[:2] == ["script", "--no-inline"]


def test_region_samples_charge_what_the_runtime_calls_to_it():
    """With call chains (--callers), a sample in the C library, the vDSO, the
    loader or the kernel that the runtime reached through such helpers only,
    or in a framework function its adapter called, runs on the runtime's
    behalf; the same functions reached from the framework's own code do
    not."""
    bench = bench_module("region_samples")
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



# A statistics line as the runtime prints it at exit (capture_stats.cc),
# with both capture sites.
NATIVE_STATS = (
    "deepcontext: native_capture_stats op_enter: 136386 calls, 90.946 ms (667 ns each); "
    "op_entry: 27836 captures on 1 threads (27835 anchored, 27835 on the previous capture), "
    "frames walked 7.7 (max 39) copied 17.7 per capture, 28 new stacks; unwind 21.844 ms "
    "(785 ns each), total 29.997 ms (1078 ns each); reused 0, cached 27775, new 61 (17.188 ms), "
    "no stack 0, by time (<0.25/1/4/16/64/256/more us) 2233/25045/451/53/28/19/7; "
    "inside_op: 23000 captures on 2 threads (22990 anchored, 12000 on the previous capture), "
    "frames walked 14.8 (max 60) copied 26.5 per capture, 40 new stacks; unwind 15.525 ms "
    "(675 ns each), total 20.447 ms (889 ns each); reused 9000, cached 13900, new 100 "
    "(3.000 ms), no stack 0, by time (<0.25/1/4/16/64/256/more us) 1/2/3/4/5/6/7; "
    "walk memo: 31 segments, 234652 steps replayed, 6932 stepped by rule")


def test_native_capture_cost_reads_both_sites_of_the_statistics_line():
    bench = bench_module("native_capture_cost")
    stderr = "some warning\n" + NATIVE_STATS + "\ndeepcontext: wrote 1 profile: x.dctx\n"
    sites = bench.parse_stats(stderr)
    assert sites["op_entry"] == {"captures": 27836, "walked": 7.7, "copied": 17.7,
                                 "unwind_ns": 785.0, "total_ns": 1078.0, "modules": {}}
    assert sites["inside_op"]["captures"] == 23000
    assert sites["inside_op"]["total_ns"] == 889.0 and sites["inside_op"]["unwind_ns"] == 675.0
    assert sites["inside_op"]["walked"] == 14.8
    # A run without the statistics (not --native, or the variable unset)
    # is an error, not an empty result.
    with pytest.raises(RuntimeError, match="native_capture_stats"):
        bench.parse_stats("deepcontext: wrote 1 profile: x.dctx\n")


# A GPU run's line (H100, the MLP): the inside-op site lists the modules its
# walks went through; this op-entry part has no such list.
NATIVE_STATS_BY_MODULE = (
    "deepcontext: native_capture_stats "
    "inside_op: 15596 captures on 1 threads (15596 anchored, 11997 on the previous capture), "
    "frames walked 14.8 (max 28) copied 36.3 per capture, 32 new stacks; unwind 20.966 ms "
    "(1344 ns each), total 22.969 ms (1473 ns each); reused 3201, cached 12331, new 64 "
    "(16.607 ms), no stack 0, by time (<0.25/1/4/16/64/256/more us) 3107/12294/147/20/22/3/3, "
    "frames walked by module: libcupti.so.13 3.37, libtorch_cpu.so 2.70, libcuda.so.1 1.12, "
    "/proc/self/fd/4 0.23; "
    "op_entry: 11221 captures on 1 threads (11220 anchored, 11220 on the previous capture), "
    "frames walked 4.6 (max 42) copied 18.9 per capture, 27 new stacks; unwind 2.0 ms "
    "(178 ns each), total 4.0 ms (356 ns each); reused 0, cached 11194, new 27 (1.0 ms), "
    "no stack 0, by time (<0.25/1/4/16/64/256/more us) 1/2/3/4/5/6/7; "
    "walk memo: 61 segments, 309278 steps replayed, 1182 stepped by rule")


def test_native_capture_cost_reads_and_tables_the_frames_walked_by_module():
    bench = bench_module("native_capture_cost")
    sites = bench.parse_stats(NATIVE_STATS_BY_MODULE)
    assert sites["inside_op"]["modules"] == {"libcupti.so.13": 3.37, "libtorch_cpu.so": 2.70,
                                             "libcuda.so.1": 1.12, "/proc/self/fd/4": 0.23}
    # The next site's part is not this one's: op_entry listed no modules.
    assert sites["op_entry"]["modules"] == {}
    # Per module, the median over rounds; a round that never met a module
    # counts 0 for it.
    other = bench.parse_stats(NATIVE_STATS_BY_MODULE.replace(
        "libcupti.so.13 3.37, libtorch_cpu.so 2.70", "libcupti.so.13 3.01"))
    summary = bench.summarize([(9.0, sites), (9.5, other), (9.2, sites)], steps=33)
    assert summary["inside_op"]["modules"]["libcupti.so.13"] == 3.37
    assert summary["inside_op"]["modules"]["libtorch_cpu.so"] == 2.70
    assert bench.summarize([(9.0, sites), (9.5, other)], steps=33)["inside_op"]["modules"][
        "libtorch_cpu.so"] == 1.35
    rows = bench.table(["b"], [summary])
    assert ("| b | inside_op | libcupti.so.13 3.37, libtorch_cpu.so 2.70, libcuda.so.1 1.12, "
            "/proc/self/fd/4 0.23 |") in rows
    assert not any(row.startswith("| b | op_entry | ") and "by module" in row for row in rows)
    assert sum(1 for row in rows if row.startswith("| b | op_entry | ")) == 1
    with pytest.raises(ValueError, match="module frames"):
        bench.parse_modules("3.37")


def test_native_capture_cost_summarizes_rounds_and_compares_builds():
    bench = bench_module("native_capture_cost")

    def site(captures, total, unwind=500.0):
        return {"captures": captures, "walked": 5.0, "copied": 20.0,
                "unwind_ns": unwind, "total_ns": total}

    new = [(10.0, {"op_entry": site(550, 800.0)}), (11.0, {"op_entry": site(550, 900.0)}),
           (12.0, {"op_entry": site(550, 700.0, 400.0)})]
    old = [(10.0, {"op_entry": site(550, 1000.0), "inside_op": site(1100, 600.0)})]
    summary = bench.summarize(new, steps=55)
    assert summary["op_entry"]["per_step"] == 10
    assert summary["op_entry"]["total_ns"] == (800.0, 700.0, 900.0)
    assert summary["op_entry"]["unwind_ns"] == (500.0, 400.0, 500.0)
    assert "inside_op" not in summary
    rows = bench.table(["new", "old"], [summary, bench.summarize(old, steps=55)])
    assert "| new | op_entry | 10 | 800 (700-900) | 500 (400-500) | 5.0 | 20.0 |" in rows
    assert "| old | inside_op | 20 | 600 (600-600) | 500 (500-500) | 5.0 | 20.0 |" in rows
    # Only sites both builds have are compared.
    assert rows[-1] == "old op_entry: 1.250x of new's total per capture"


def test_native_capture_cost_counts_the_rounds_each_build_was_lower():
    bench = bench_module("native_capture_cost")

    def process(op_entry, inside_op=None):
        sites = {"op_entry": {"captures": 100, "walked": 5.0, "copied": 20.0,
                              "unwind_ns": 1.0, "total_ns": op_entry}}
        if inside_op is not None:
            sites["inside_op"] = dict(sites["op_entry"], total_ns=inside_op)
        return (10.0, sites)

    # Rounds pair by position: new's first round against old's first.
    new = [process(700.0, 500.0), process(900.0), process(650.0, 800.0)]
    old = [process(800.0, 600.0), process(850.0, 400.0), process(700.0, 700.0)]
    assert bench.rounds_lower(new, old, "op_entry") == (2, 3)
    # A round where either build saw no GPU call is left out.
    assert bench.rounds_lower(new, old, "inside_op") == (1, 2)
    summaries = [bench.summarize(new, steps=10), bench.summarize(old, steps=10)]
    rows = bench.table(["new", "old"], summaries, [new, old])
    assert rows[-2] == ("old op_entry: 1.143x of new's total per capture; "
                        "new's lower in 2 of 3 rounds")
    assert rows[-1].endswith("new's lower in 1 of 2 rounds")
