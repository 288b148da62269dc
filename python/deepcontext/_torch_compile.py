"""What the runtime needs to know about torch.compile's Python code.

torch.compile runs a program's model through code of its own: Dynamo
traces it on first call, Inductor generates a Python module per graph
(/tmp/torchinductor_<user>/.../<hash>.py) whose `call()` launches Triton
kernels through a launcher, and autotunes kernels the first time they run.

Two kinds of frames are named here:

- launch glue, hidden where it is innermost: between the generated
  `call()` line and a kernel stand only Inductor's and Triton's launchers,
  so the kernel hangs right below the generated line that launched it;
- compilation work, below a [compile] phase: tracing, code generation and
  autotuning run GPU work (benchmark launches of every candidate
  configuration) that is not the step's own and must not be summed with it.
"""

from . import _runtime

# Substrings of file paths of launcher code.
LAUNCH_GLUE_FILES = (
    "/torch/_inductor/runtime/",
    "/triton/runtime/",
    "/triton/backends/",
    "/triton/compiler/",
    "/triton/testing.py",
)
# (file, function) of launchers generated with exec(): their file,
# "<string>", is also that of `python -c` programs, which stay.
LAUNCH_GLUE_FRAMES = (("<string>", "launcher"),)

# (file substring, function) of compilation work; "" = every function of the
# file. A function matches by qualified name or its last component.
COMPILE_FRAMES = (
    # Dynamo's frame conversion: tracing, AOTAutograd and Inductor for the
    # forward (and an eager backward) graph.
    ("/torch/_dynamo/convert_frame.py", ""),
    # The backward graph compiled lazily at the first backward.
    ("/torch/_inductor/compile_fx.py", "compile_fx_inner"),
    ("/torch/_inductor/compile_fx.py", "fx_codegen_and_compile"),
    ("/torch/_inductor/compile_fx.py", "bw_compiler"),
    ("/torch/_inductor/async_compile.py", ""),
    # Autotuning at a kernel's first run: every candidate config is
    # benchmarked on the real inputs.
    ("/torch/_inductor/runtime/triton_heuristics.py", "autotune_to_one_config"),
    ("/torch/_inductor/runtime/triton_heuristics.py", "benchmark_all_configs"),
    ("/torch/_inductor/runtime/triton_heuristics.py", "coordinate_descent_tuning"),
    # max-autotune's choice between GEMM templates.
    ("/torch/_inductor/select_algorithm.py", ""),
    ("/torch/_inductor/autotune_process.py", ""),
    # A user's own @triton.autotune kernels.
    ("/triton/runtime/autotuner.py", "_bench"),
)


def install():
    """Registers the frames above with the runtime (before compiled code
    first runs: the runtime classifies a call site when it first sees it)."""
    for pattern in LAUNCH_GLUE_FILES:
        _runtime.hide_leaf_files(pattern)
    for file_substring, function in LAUNCH_GLUE_FRAMES:
        _runtime.hide_leaf_frames(file_substring, function)
    for file_substring, function in COMPILE_FRAMES:
        _runtime.mark_compile_frames(file_substring, function)
