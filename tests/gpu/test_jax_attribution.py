"""JAX's GPU kernels land under the Python line that ran the jitted function."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import PYTHON, load_profile, run_profiled  # noqa: E402
from kernel_queries import kernels_at, launches  # noqa: E402
from markers import marker_line  # noqa: E402
from gpu_probe import python_can  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_jax.py")
STEPS = 20


pytestmark = pytest.mark.skipif(
    not python_can("jax", "jax.default_backend() == 'gpu'",
                   env=dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")),
    reason="no JAX with a GPU backend")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("jax") / "jax.dctx"
    result = run_profiled([PYTHON, PROGRAM], out, check=0)
    assert b"jax done" in result.stdout, result.stderr.decode()[-3000:]
    return load_profile(out)


def test_every_kernel_is_attributed(tree):
    meta = tree.metadata
    assert not meta["gpu"].startswith("no GPU activity recorded"), meta["gpu"]
    assert int(meta.get("gpu_records", "0")) > 0, meta
    assert meta.get("gpu_dropped_records", "0") == "0", meta
    assert int(meta.get("gpu_unattributed_records", "0")) == 0, meta
    assert "gpu_warning" not in meta, meta


def test_kernels_of_each_jitted_call_are_under_its_line(tree):
    # Each step runs at least one kernel of its own under the line.
    for marker in ("MARK_LAYER", "MARK_LOSS"):
        kernels = kernels_at(tree, PROGRAM, marker)
        assert launches(kernels) >= STEPS, (marker, [(k.name, launches([k])) for k in kernels])
        assert sum(k.exclusive["gpu_time"]["sum"] for k in kernels) > 0


def test_the_matmul_runs_under_both_lines(tree):
    # loss() calls layer() twice: its GEMMs are the layer's, twice per step.
    def gemm_runs(marker):
        return launches([k for k in kernels_at(tree, PROGRAM, marker)
                         if "gemm" in k.name.lower() or "matmul" in k.name.lower()
                         or "sm90" in k.name.lower()])
    assert gemm_runs("MARK_LAYER") >= STEPS
    assert gemm_runs("MARK_LOSS") >= 2 * STEPS


def test_a_loops_replays_sit_under_the_loops_line(tree, request):
    # loss()'s first call, at MARK_WARMUP, compiles it and records its
    # command buffer; the loop's calls at MARK_LOSS only launch it. Their
    # kernels belong to the loop's line, one call's worth to the warm-up's.
    def steady_gemms(marker):
        return launches([k for k in kernels_at(tree, PROGRAM, marker) if not _in_compile(k)
                         and ("gemm" in k.name.lower() or "sm90" in k.name.lower())])
    warm_up, loop = steady_gemms("MARK_WARMUP"), steady_gemms("MARK_LOSS")
    _show(request, "GEMMs run: %d under the warm-up call, %d under the loop of %d calls"
          % (warm_up, loop, STEPS))
    assert warm_up > 0
    assert warm_up * STEPS <= loop, (warm_up, loop)


def _in_compile(node):
    return any(a.kind == "phase" and a.name == "[compile]" for a in node.ancestors())


def _show(request, text):
    # The shares measured, also when the test passes (pytest -q hides prints).
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(text)


def test_steady_kernels_sit_below_their_hlo_operation(tree, request):
    # XLA's NVTX ranges reach the runtime (NVTX_INJECTION64_PATH names
    # CUPTI): between the line and each kernel, launched or replayed from
    # a command buffer, the HLO instruction that ran it.
    for marker in ("MARK_LAYER", "MARK_LOSS"):
        steady = [k for k in kernels_at(tree, PROGRAM, marker) if not _in_compile(k)]
        total = sum(k.excl("gpu_time") for k in steady)
        under = sum(k.excl("gpu_time") for k in steady
                    if any(a.kind == "operator" and not a.name.startswith("command_buffer")
                           for a in k.ancestors()))
        assert total > 0, marker
        _show(request, "%s: %.4f of steady GPU time below an HLO operation (target 0.95)"
              % (marker, under / total))
        assert under >= 0.95 * total, (marker, under / total,
                                       [repr(k) for k in steady][:10])


def test_compilation_sits_in_the_compile_phase_of_the_call(tree):
    # Autotuning runs kernels on XLA's compiler threads; they belong to the
    # line whose call was being compiled.
    compiled = [k for k in kernels_at(tree, PROGRAM, "MARK_LAYER") if _in_compile(k)]
    assert sum(k.excl("gpu_time") for k in compiled) > 0, [repr(k) for k in compiled][:5]


def test_steady_kernels_sit_below_the_line_inside_the_jitted_function(tree, request):
    # The HLO of each compiled module reaches the runtime (the package's
    # compile hook): below the call line (in main), the lines of layer()
    # and loss() that made each operation; the matmul's is layer's.
    inner = marker_line(PROGRAM, "MARK_MATMUL")
    for marker in ("MARK_LAYER", "MARK_LOSS"):
        steady = [k for k in kernels_at(tree, PROGRAM, marker) if not _in_compile(k)]
        total = sum(k.excl("gpu_time") for k in steady)
        under = sum(k.excl("gpu_time") for k in steady
                    if any(a.kind == "python" and a.name in ("layer", "loss")
                           and a.file.endswith("gpu_jax.py") for a in k.ancestors()))
        assert total > 0, marker
        _show(request, "%s: %.4f of steady GPU time below a line of layer()/loss() "
              "(target 0.95)" % (marker, under / total))
        assert under >= 0.95 * total, (marker, under / total, [repr(k) for k in steady][:8])
        gemms = [k for k in steady if "gemm" in k.name.lower() or "sm90" in k.name.lower()]
        assert gemms and all(any(a.kind == "python" and a.line == inner for a in k.ancestors())
                             for k in gemms), [repr(k) for k in gemms][:4]
