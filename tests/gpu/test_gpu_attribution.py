"""GPU activity lands under the Python line and op that launched it."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# Shares the integration tests' helpers (running under the profiler,
# reading profiles, source markers).
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import PYTHON, cli, load_profile, run_profiled, run_with_package  # noqa: E402
from markers import marker_line  # noqa: E402
from kernel_queries import kernels as _kernels, kernels_at as _kernels_at  # noqa: E402
from kernel_queries import launches as _launches, under_line  # noqa: E402
from gpu_probe import python_can  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_ops.py")


def _device_count():
    probe = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.device_count())"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return int(probe.stdout or 0) if probe.returncode == 0 else 0


pytestmark = pytest.mark.skipif(not python_can("torch", "torch.cuda.is_available()"),
                                reason="no CUDA device")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "gpu.dctx"
    result = run_profiled([PYTHON, PROGRAM], out, check=0)
    assert b"gpu ops done" in result.stdout
    return load_profile(out)


def _printed(result, key):
    """The integer the program printed as `key=N`."""
    return int(result.stdout.decode().split(key + "=")[1].split()[0])


_WINDOWS_PROFILE = "windows.dctx"  # what _run_in_windows writes, under tmp_path


def _run_in_windows(tmp_path, name, fraction, window_ms, done):
    """Runs programs/`name` under trace windows and checks that it printed
    `done`; returns the program's path, the run's result and its profile."""
    program = os.path.join(HERE, "programs", name)
    out = tmp_path / _WINDOWS_PROFILE
    result = run_profiled([PYTHON, program], out, check=0,
                          options=["--trace-fraction", str(fraction),
                                   "--trace-window-ms", str(window_ms)])
    assert done.encode() in result.stdout, result.stderr.decode()[-3000:]
    return program, result, load_profile(out)


def test_backend_started(tree):
    assert not tree.metadata["gpu"].startswith("no GPU activity recorded"), tree.metadata["gpu"]
    assert tree.metadata.get("gpu_dropped_records", "0") == "0"
    assert int(tree.metadata.get("gpu_unattributed_records", "0")) == 0


def test_mm_kernels_under_their_line_and_op(tree):
    line = marker_line(PROGRAM, "MM_LINE")
    under = [k for k in _kernels(tree) if under_line(k, line, PROGRAM)]
    assert under, [repr(k) for k in _kernels(tree)]
    assert sum(k.exclusive["gpu_time"]["count"] for k in under) >= 5
    for kernel in under:
        assert any(a.kind == "operator" and a.name == "aten::mm" for a in kernel.ancestors())
        assert kernel.parent.kind == "gpu_api", repr(kernel)
        assert kernel.excl("gpu_time") > 0


def test_copy_memset_and_sync(tree):
    copy_line = marker_line(PROGRAM, "COPY_LINE")
    copies = [n for n in tree.nodes if "bytes" in n.exclusive and under_line(n, copy_line, PROGRAM)]
    assert copies and sum(n.excl("bytes") for n in copies) == 256 * 256 * 4
    assert any("HtoD" in n.name for n in copies)
    syncs = [n for n in tree.nodes if "sync_time" in n.exclusive]
    sync_line = marker_line(PROGRAM, "SYNC_LINE")
    assert any(under_line(n, sync_line, PROGRAM) for n in syncs), [repr(n) for n in syncs]


def test_graph_replays_are_attributed_to_the_capture_line(tree):
    capture = marker_line(PROGRAM, "CAPTURE_LINE")
    replayed = [k for k in _kernels(tree) if under_line(k, capture, PROGRAM)]
    assert replayed, [repr(k) for k in _kernels(tree)]
    assert int(tree.metadata.get("gpu_graph_node_records", "0")) > 0


def test_report_defaults_to_gpu_time(tree, tmp_path):
    out = tmp_path / "r.dctx"
    run_profiled([PYTHON, PROGRAM], out, check=0)
    report = cli("report", out).stdout.decode()
    assert "gpu_time" in report.split("Top-down")[0]


def test_native_frames_reach_the_gpu_api(tmp_path):
    # With --native: Python line -> aten::mm -> native frames of the op's
    # implementation (ATen, cuBLAS) -> driver API -> kernel.
    out = tmp_path / "native.dctx"
    run_profiled([PYTHON, PROGRAM], out, options=["--native"], timeout=600, check=0)
    tree = load_profile(out)
    line = marker_line(PROGRAM, "MM_LINE")
    checked = 0
    for api in tree.find(kind="gpu_api"):
        if not under_line(api, line, PROGRAM):
            continue
        between = []
        for node in api.ancestors():
            if node.kind == "operator":
                break
            between.append(node)
        assert between and all(n.kind == "native" for n in between), repr(api)
        assert any("at::" in n.name or "cublas" in n.name.lower() for n in between), repr(api)
        checked += 1
    assert checked, [repr(n) for n in tree.find(kind="gpu_api")]


def test_device_memory_is_charged_to_the_allocating_line(tmp_path):
    program = os.path.join(HERE, "programs", "gpu_memory.py")
    out = tmp_path / "memory.dctx"
    result = run_profiled([PYTHON, program], out, check=0)
    torch_peak = int(result.stdout.decode().split("max_allocated=")[1].split()[0])
    tree = load_profile(out)
    assert tree.metadata.get("gpu_memory", "").startswith("tracked"), tree.metadata.get("gpu_memory")
    MiB = 1 << 20

    def under(line, metric):
        nodes = [n for n in tree.nodes if metric in n.exclusive and under_line(n, line, program)]
        return nodes, sum(n.excl(metric) for n in nodes)

    keep, keep_bytes = under(marker_line(program, "KEEP_LINE"), "gpu_alloc_bytes")
    temp, temp_bytes = under(marker_line(program, "TEMP_LINE"), "gpu_alloc_bytes")
    assert keep_bytes == 4 * MiB, [repr(n) for n in keep]
    assert temp_bytes == 3 * 16 * MiB, [repr(n) for n in temp]
    assert sum(n.exclusive["gpu_alloc_bytes"]["count"] for n in temp) == 3
    assert all(any(a.kind == "operator" and a.name == "aten::empty"
                   for a in [n] + list(n.ancestors())) for n in keep + temp)
    # Who held the peak: the kept block and one temporary block.
    assert under(marker_line(program, "KEEP_LINE"), "gpu_peak_live_bytes")[1] == 4 * MiB
    assert under(marker_line(program, "TEMP_LINE"), "gpu_peak_live_bytes")[1] == 16 * MiB
    assert int(tree.metadata["gpu0_memory_peak_bytes"]) == torch_peak == 20 * MiB


def test_a_later_cupti_client_never_leaves_silently_missing_numbers(tmp_path):
    program = os.path.join(HERE, "programs", "gpu_takeover.py")
    out = tmp_path / "takeover.dctx"
    result = run_profiled([PYTHON, program], out, check=0)
    assert b"takeover done" in result.stdout
    tree = load_profile(out)
    warned = "gpu_warning" in tree.metadata
    assert warned == (b"deepcontext: warning" in result.stderr), result.stderr.decode()[-2000:]
    def kernels_at(marker):
        return _launches(_kernels_at(tree, program, marker))

    before = kernels_at("BEFORE_LINE")
    assert before >= 10, tree.metadata
    for marker in ("DURING_LINE", "AFTER_LINE"):
        # Every product is measured, or the profile says that some are not.
        kernels = kernels_at(marker)
        assert kernels == before or (warned and kernels < before), (marker, kernels, tree.metadata)
    assert warned or int(tree.metadata.get("gpu_launches_without_records", "0")) == 0


def test_region_started_after_cuda_init_tracks_memory(tmp_path):
    # deepcontext.profile() after CUDA is up hooks the allocator at once
    # (the lazy-init path is covered by the tests under `deepcontext run`).
    out = tmp_path / "region.dctx"
    code = ("import sys, torch, deepcontext\n"
            "warm = torch.empty(1024, device='cuda')\n"
            "with deepcontext.profile(sys.argv[1], cpu_time=False):\n"
            "    block = torch.empty(8 << 20, dtype=torch.uint8, device='cuda')  # REGION_ALLOC\n"
            "    torch.cuda.synchronize()\n")
    result = run_with_package([PYTHON, "-c", code, out], timeout=600)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    tree = load_profile(out)
    assert tree.metadata["gpu_memory"].startswith("tracked"), tree.metadata["gpu_memory"]
    assert tree.metadata["op_cpu_time"] == "off"
    allocated = sum(n.excl("gpu_alloc_bytes") for n in tree.nodes if "gpu_alloc_bytes" in n.exclusive)
    assert allocated == 8 << 20
    # `warm` (4 KiB) was allocated before the region and counts in the peak.
    assert int(tree.metadata["gpu0_memory_before_profiling_bytes"]) == 4096
    assert int(tree.metadata["gpu0_memory_peak_bytes"]) == (8 << 20) + 4096


def test_regions_detach_cupti_and_attach_again(tmp_path):
    program = os.path.join(HERE, "programs", "gpu_regions.py")
    first, second = tmp_path / "first.dctx", tmp_path / "second.dctx"
    result = run_with_package([PYTHON, program, first, second], timeout=600)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert b"regions done" in result.stdout

    def kernels_at(tree, marker):
        return _launches(_kernels_at(tree, program, marker))

    for path in (first, second):
        tree = load_profile(path)
        assert tree.metadata["gpu_cupti_detach"].startswith("at stop (cuptiFinalize)"), \
            tree.metadata["gpu_cupti_detach"]
        assert int(tree.metadata.get("gpu_launches_without_records", "0")) == 0, tree.metadata
        assert int(tree.metadata.get("gpu_unattributed_records", "0")) == 0, tree.metadata
    tree = load_profile(first)
    # A product may take more than one kernel; every product takes as many.
    per_product = kernels_at(tree, "FIRST_LINE") / 5
    assert per_product >= 1 and per_product == int(per_product), per_product
    assert kernels_at(tree, "CAPTURE_LINE") >= 1
    # Still running when the region ended: waited for, so all are there.
    assert kernels_at(tree, "TAIL_LINE") == 20 * per_product
    tree = load_profile(second)
    assert kernels_at(tree, "SECOND_LINE") == 5 * per_product
    # The graph was captured while the first region traced; in the second
    # its replays go to the replaying line.
    assert kernels_at(tree, "REPLAY_LINE") >= 3, [repr(k) for k in _kernels(tree)]


@pytest.mark.skipif(_device_count() < 2, reason="needs two CUDA devices")
def test_two_devices_are_attributed_and_flushed_at_exit(tmp_path):
    program = os.path.join(HERE, "programs", "gpu_two_devices.py")
    out = tmp_path / "two.dctx"
    result = run_profiled([PYTHON, program], out, check=0)
    assert b"two devices done" in result.stdout
    products = _printed(result, "products")
    tree = load_profile(out)
    assert tree.metadata["gpu_devices"].startswith("2x "), tree.metadata
    for device in (0, 1):
        assert int(tree.metadata["gpu%d_kernels" % device]) > 0, tree.metadata
        assert int(tree.metadata["gpu%d_busy_ns" % device]) > 0, tree.metadata
    assert int(tree.metadata.get("gpu_launches_without_records", "0")) == 0, tree.metadata
    assert int(tree.metadata.get("gpu_unattributed_records", "0")) == 0, tree.metadata

    def kernels_at(marker):
        return _launches(_kernels_at(tree, program, marker))

    # Each product is one or more kernels, every one of them recorded; the
    # second device's were still running when the program ended.
    for marker in ("DEVICE0_LINE", "DEVICE1_LINE"):
        kernels = kernels_at(marker)
        assert kernels >= products and kernels % products == 0, (marker, kernels, tree.metadata)


def test_trace_windows_cover_part_of_the_run_and_keep_every_kernel_attributed(tmp_path):
    program, result, tree = _run_in_windows(tmp_path, "gpu_windows.py", 0.2, 20, "windows done")
    products = _printed(result, "products")
    meta = tree.metadata
    share = int(meta["traced_ns"]) / int(meta["duration_ns"])
    assert 0.05 < share < 0.5, meta
    assert int(meta["trace_window_count"]) >= 10, meta
    # Work launched while tracing switches is left out, never misattributed.
    assert int(meta.get("gpu_unattributed_records", "0")) == 0, meta
    assert int(meta.get("gpu_launches_without_records", "0")) == 0, meta

    at_line = _kernels_at(tree, program, "PRODUCT_LINE")
    kernels = _launches(at_line)
    under_mm = _launches(k for k in at_line if any(a.name == "aten::mm" for a in k.ancestors()))
    mm_calls = sum(n.calls() for n in tree.nodes if n.name == "aten::mm")
    assert 0.05 * products < kernels < 0.5 * products, (kernels, products, meta)
    # Inside windows ops and kernels are traced together: a kernel without its
    # op only at a window's edge.
    assert under_mm >= 0.95 * kernels, (under_mm, kernels)
    assert abs(mm_calls - kernels) <= 0.05 * kernels, (mm_calls, kernels)
    # Long pauses detach CUPTI, and the next window attaches it again.
    assert int(meta["gpu_window_detaches"]) >= 5, meta
    assert "gpu_window_error" not in meta, meta


def test_graph_captured_before_a_detach_keeps_its_capture_line(tmp_path):
    program, result, tree = _run_in_windows(tmp_path, "gpu_windows_graph.py", 0.4, 200,
                                            "graph windows done")
    assert b"captured_in_window=1 replayed_in_window=1" in result.stdout, result.stdout
    meta = tree.metadata
    assert int(meta["gpu_window_detaches"]) >= 1, meta
    assert int(meta.get("gpu_unattributed_records", "0")) == 0, meta
    assert int(meta.get("gpu_launches_without_records", "0")) == 0, meta
    # Nothing of the pause is traced (but the product the window opened on).
    assert _launches(_kernels_at(tree, program, "PAUSE_LINE")) <= 1
    # Each replay runs the graph's kernels (a product may take more than one
    # kernel, the tanh one more), all under the capture line: graph node ids
    # outlive a detach.
    captured = _launches(_kernels_at(tree, program, "CAPTURE_LINE"))
    assert captured >= 6 and captured % 3 == 0, (captured, [repr(k) for k in _kernels(tree)])
    assert int(meta["gpu_graph_node_records"]) == captured, meta
    assert _launches(_kernels_at(tree, program, "REPLAY_LINE")) == 0, [repr(k) for k in _kernels(tree)]


def test_a_client_that_subscribes_between_windows_keeps_cupti(tmp_path):
    program, result, tree = _run_in_windows(tmp_path, "gpu_windows_other_client.py", 0.01, 200,
                                            "other client done")
    # Otherwise Kineto's start outlasted the pause, and found DeepContext.
    assert _printed(result, "window_during_start") == 0, result.stdout
    assert _printed(result, "kernels_seen_by_torch_profiler") > 0, result.stdout
    meta = tree.metadata
    assert "another CUPTI client" in meta["gpu_window_error"], meta
    assert b"GPU tracing ended" in result.stderr, result.stderr.decode()[-3000:]
    # What was traced before stays; nothing after the other client came.
    assert _launches(_kernels_at(tree, program, "TRACED_LINE")) >= 5
    assert _launches(_kernels_at(tree, program, "OTHER_CLIENT_LINE")) == 0
    report = cli("report", tmp_path / _WINDOWS_PROFILE).stdout.decode()
    assert "Warning:" in report and "GPU tracing ended" in report, report[:2000]


def test_graphs_captured_while_windows_switch_stay_valid(tmp_path):
    _, result, tree = _run_in_windows(tmp_path, "gpu_windows_captures.py", 0.2, 20, "captures done")
    captures = _printed(result, "captures")
    assert captures >= 100, result.stdout
    meta = tree.metadata
    assert int(meta["trace_window_count"]) >= 10, meta
    assert int(meta["gpu_window_detaches"]) >= 1, meta
    assert int(meta.get("gpu_unattributed_records", "0")) == 0, meta


def _assert_peak_matches_torch(result, tree):
    torch_peak = _printed(result, "max_allocated")
    profile_peak = int(tree.metadata["gpu0_memory_peak_bytes"])
    assert abs(profile_peak - torch_peak) <= 0.001 * torch_peak, (profile_peak, torch_peak)
    reserved = int(tree.metadata["gpu0_memory_reserved_peak_bytes"])
    torch_reserved = _printed(result, "max_reserved")
    assert abs(reserved - torch_reserved) <= 0.001 * torch_reserved, (reserved, torch_reserved)
    # The holders of the peak add up to it.
    assert abs(tree.total("gpu_peak_live_bytes") - profile_peak) <= 0.001 * profile_peak


def test_device_peak_of_a_whole_run_matches_torch(tmp_path):
    program = os.path.join(HERE, "programs", "gpu_memory_peak.py")
    out = tmp_path / "run.dctx"
    result = run_profiled([PYTHON, program, "run"], out, check=0)
    _assert_peak_matches_torch(result, load_profile(out))


def test_device_peak_of_a_region_counts_memory_allocated_before_it(tmp_path):
    program = os.path.join(HERE, "programs", "gpu_memory_peak.py")
    out = tmp_path / "region.dctx"
    result = run_with_package([PYTHON, program, out])
    assert result.returncode == 0, result.stderr.decode()
    tree = load_profile(out)
    _assert_peak_matches_torch(result, tree)
    before = int(tree.metadata["gpu0_memory_before_profiling_bytes"])
    # Weights, gradients and AdamW's two moments: 4 float32 copies of the
    # parameters (2048*4096 + 4096*4096 + 4096*1024 weights and the biases).
    parameters = 2048 * 4096 + 4096 + 4096 * 4096 + 4096 + 4096 * 1024 + 1024
    assert before >= 4 * 4 * parameters
    holders = tree.find(name="[allocated before profiling]")
    region_line = marker_line(program, "REGION_LINE")
    assert [n for n in holders if n.parent.line == region_line], [n.path() for n in holders]
    # At the peak (in a backward pass) the gradients of the step before were
    # already freed by zero_grad(set_to_none=True): the weights and AdamW's
    # moments are what is left of the memory allocated before the region.
    held = sum(n.excl("gpu_peak_live_bytes") for n in holders)
    assert 3 * 4 * parameters <= held < before
