"""Memory live before profiling began counts in the device peak, under an
"[allocated before profiling]" node below the line that started profiling."""

from conftest import PYTHON, load_profile, program, run_with_package
from markers import marker_line

MiB = 1 << 20


def test_snapshot_at_start_counts_in_peak_and_reserved(tmp_path):
    out = tmp_path / "before.dctx"
    result = run_with_package([PYTHON, program("memory_before_region.py"), out])
    assert result.returncode == 0, result.stderr.decode()
    tree = load_profile(out)
    metadata = tree.metadata
    # Allocated blocks only: 8 + 4 + 1 MiB (not the free or pending-free ones),
    # each counted once although the snapshot was reported twice.
    assert metadata["gpu0_memory_peak_bytes"] == str(13 * MiB)
    assert metadata["gpu0_memory_live_bytes"] == str(13 * MiB)
    assert metadata["gpu0_memory_before_profiling_bytes"] == str(13 * MiB)
    assert metadata["gpu0_memory_allocations"] == "0"
    assert metadata["gpu0_memory_reserved_bytes"] == str(22 * MiB)
    assert metadata["gpu0_memory_reserved_peak_bytes"] == str(22 * MiB)

    holders = tree.find(name="[allocated before profiling]")
    start = marker_line(program("memory_before_region.py"), "START_LINE")
    first = [n for n in holders if n.parent.line == start]
    assert len(first) == 1, [n.path() for n in holders]
    assert first[0].kind == "phase"
    # The peak-holder view adds up to the peak.
    assert first[0].excl("gpu_peak_live_bytes") == 13 * MiB
    assert tree.total("gpu_peak_live_bytes") == 13 * MiB
