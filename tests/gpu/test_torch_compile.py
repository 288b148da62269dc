"""torch.compile: Inductor's Triton kernels and the GEMMs of a compiled
module land under the Python line that called it (forward, and its
[backward] phase), below the line of Inductor's generated code that
launched them; compilation and autotuning stay in a [compile] phase. Each
check runs in both of torch.compile's modes that launch differently: the
default (Triton launches from the generated code) and "reduce-overhead"
(cudagraph trees: the generated code runs once under stream capture, later
steps replay the graphs, and their kernels land where they were captured)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import PYTHON, cli, load_profile, run_profiled  # noqa: E402
from kernel_queries import kernels, launches, under_line  # noqa: E402
from markers import marker_line  # noqa: E402
from gpu_probe import python_can  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_compile.py")
STEPS = 8


pytestmark = pytest.mark.skipif(
    not python_can("torch, triton", "torch.cuda.is_available() and hasattr(torch, 'compile')"),
    reason="no CUDA torch with torch.compile and Triton")


@pytest.fixture(scope="module", params=["default", "reduce-overhead"])
def profile_path(request, tmp_path_factory):
    mode = request.param
    directory = tmp_path_factory.mktemp("compile-" + mode)
    out = directory / "compile.dctx"
    # A cache of its own: the first step compiles and autotunes every time.
    # (Named like Inductor's default, /tmp/torchinductor_<user>.) One
    # compile thread: no pool of worker processes to start.
    env = {"TORCHINDUCTOR_CACHE_DIR": str(directory / "torchinductor_test"),
           "TRITON_CACHE_DIR": str(directory / "triton"),
           "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    result = run_profiled([PYTHON, PROGRAM, str(STEPS), mode], out, env=env, timeout=400,
                          check=0)
    assert b"compile done" in result.stdout, result.stderr.decode()[-3000:]
    keep = os.environ.get("DEEPCONTEXT_COMPILE_PROFILE")
    if keep:  # where the GPU machine's run leaves it for inspection
        with open(out, "rb") as source, open(keep.replace(".dctx", "-" + mode + ".dctx"),
                                             "wb") as copy:
            copy.write(source.read())
    return out


@pytest.fixture(scope="module")
def tree(profile_path):
    return load_profile(profile_path)


def _in_phase(node, name):
    return any(a.kind == "phase" and a.name == name for a in node.ancestors())


def _is_triton(kernel):
    return kernel.name.startswith("triton_")


def _is_gemm(kernel):
    name = kernel.name.lower()
    return any(word in name for word in ("gemm", "sm90", "cutlass", "nvjet", "cublas"))


def _generated_line(kernel):
    """The frame of Inductor's generated module above the kernel, if any."""
    for a in kernel.ancestors():
        if a.kind == "python" and "torchinductor" in a.file:
            return a
    return None


def _time(nodes):
    return sum(k.excl("gpu_time") for k in nodes)


def test_every_record_is_attributed(tree):
    meta = tree.metadata
    assert not meta["gpu"].startswith("no GPU activity recorded"), meta["gpu"]
    assert meta.get("gpu_dropped_records", "0") == "0", meta
    assert int(meta.get("gpu_unattributed_records", "0")) == 0, meta


def test_compiled_kernels_sit_under_the_calling_line(tree):
    line = marker_line(PROGRAM, "MARK_COMPILED_CALL")
    compiled = [k for k in kernels(tree) if _is_triton(k) or _is_gemm(k)]
    assert any(_is_triton(k) for k in compiled), sorted({k.name for k in kernels(tree)})
    under = [k for k in compiled if under_line(k, line, PROGRAM)]
    share = _time(under) / _time(compiled)
    print("compiled-region GPU time under the calling line: %.1f %%" % (100 * share))
    assert share >= 0.99, [repr(k) for k in compiled if k not in under][:8]


def test_forward_and_backward_are_both_there(tree):
    line = marker_line(PROGRAM, "MARK_COMPILED_CALL")
    steady = [k for k in kernels(tree) if _is_triton(k) and under_line(k, line, PROGRAM)
              and not _in_phase(k, "[compile]")]
    backward = [k for k in steady if _in_phase(k, "[backward]")]
    forward = [k for k in steady if not _in_phase(k, "[backward]")]
    assert launches(forward) >= STEPS and launches(backward) >= STEPS, \
        ([repr(k) for k in forward][:4], [repr(k) for k in backward][:4])
    gemms = [k for k in kernels(tree) if _is_gemm(k) and under_line(k, line, PROGRAM)
             and not _in_phase(k, "[compile]")]
    assert any(_in_phase(k, "[backward]") for k in gemms), [repr(k) for k in gemms][:6]


def test_triton_kernels_hang_below_the_generated_line(tree):
    # call() of the generated module -> the launch -> the kernel, with the
    # launchers (Inductor's, Triton's) left out between.
    steady = [k for k in kernels(tree) if _is_triton(k) and not _in_phase(k, "[compile]")]
    below = [k for k in steady if _generated_line(k) is not None]
    share = _time(below) / _time(steady)
    print("steady Triton GPU time below a generated line: %.1f %%" % (100 * share))
    assert share >= 0.95, [repr(k) for k in steady if k not in below][:6]
    for kernel in below:
        frame = kernel.parent.parent
        assert frame.kind == "python" and "torchinductor" in frame.file, repr(kernel)
        assert frame.line > 0


def test_steady_kernels_ran_once_per_step(tree):
    # Autotuning benchmarks each candidate config of a kernel at its first
    # run: those launches belong to [compile], not to the step.
    per_name = {}
    for kernel in kernels(tree):
        if _is_triton(kernel) and not _in_phase(kernel, "[compile]"):
            per_name[kernel.name] = per_name.get(kernel.name, 0) + launches([kernel])
    assert per_name
    odd = {name: count for name, count in per_name.items() if count % STEPS}
    assert not odd, odd


def test_compilation_is_in_a_compile_phase(tree):
    line = marker_line(PROGRAM, "MARK_COMPILED_CALL")
    compile_nodes = [n for n in tree.nodes if n.kind == "phase" and n.name == "[compile]"]
    assert any(under_line(n, line, PROGRAM) for n in compile_nodes), \
        [repr(n) for n in compile_nodes][:4]
    tuning = [k for k in kernels(tree) if _in_phase(k, "[compile]")]
    assert all(under_line(k, line, PROGRAM) for k in tuning), [repr(k) for k in tuning][:4]
    # Dynamo's tracing ran operators (on fake tensors) in there.
    assert any(n.kind == "operator" and _in_phase(n, "[compile]") for n in tree.nodes)


def test_report_shows_the_generated_line_and_kernel(profile_path):
    # torch.compile's machinery is folded: the compiled region, the
    # model's forward, CompiledFunction, then the generated lines.
    # Whole names: at the default width a deep node's name is shortened in
    # the middle, and the check is about what is shown, not how wide.
    report = cli("report", "--min-percent", "0", "--wide", profile_path).stdout.decode()
    tree_part = report.split("Top-down")[1].split("Top hotspots")[0]
    for shown in ("Torch-Compiled Region", "CompiledFunction", "CompiledFunctionBackward",
                  "triton_", "[compile]", "[backward]"):
        assert shown in tree_part, (shown, tree_part[:4000])
    for folded in ("eval_frame.py", "runtime_wrappers.py", "output_code.py",
                   "triton_heuristics.py"):
        assert folded not in tree_part, (folded, tree_part[:4000])
