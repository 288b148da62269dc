"""--gpu-samples on a memory-bound and a compute-bound Triton kernel: the
dominant stall reasons point the right way, the samples hang under the
launching lines, and the hottest source lines are the load's use and the
FMA loop (tests/gpu/check_stalls.py)."""

import fcntl
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import BUILD, PYTHON, load_profile, run_profiled  # noqa: E402
from gpu_probe import python_can  # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "gpu_stalls.py")


pytestmark = pytest.mark.skipif(not python_can("torch, triton", "torch.cuda.is_available()"),
                                reason="no CUDA device or no Triton")


def test_stall_reasons_point_the_right_way_on_the_right_lines(tmp_path):
    out = tmp_path / "stalls.dctx"
    run_profiled([PYTHON, PROGRAM, "20"], out, options=["--gpu-samples"], check=0)
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    check = subprocess.run([PYTHON, os.path.join(HERE, "check_stalls.py"), str(out), PROGRAM],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = check.stdout.decode()
    assert check.returncode == 0, output
    assert "stall check: PASS" in output


def test_a_gpu_another_process_holds_is_traced_without_samples(tmp_path):
    """One process per GPU drives its performance monitors
    (runtime/gpu/counter_claims.h): a run that finds the GPU claimed traces
    it without instruction samples and names the holder, instead of letting
    CUPTI refuse it or crash it when profiling stops."""
    locks = tmp_path / "locks"
    locks.mkdir()
    env = {"DEEPCONTEXT_LOCK_DIR": str(locks)}
    # A first run claims the GPU through its lock file, and empties the file
    # when its claim ends: a later refusal must not name a process that no
    # longer holds the GPU.
    first = tmp_path / "first.dctx"
    run_profiled([PYTHON, PROGRAM, "2"], first, options=["--gpu-samples"], env=env, check=0)
    assert load_profile(first).metadata["gpu_samples"].startswith("on ("), \
        load_profile(first).metadata
    files = sorted(locks.glob("deepcontext-gpu-GPU-*.lock"))
    assert files, list(locks.iterdir())
    assert [path.read_text() for path in files] == [""] * len(files)

    # This test holds it now, as another profiler would.
    holder = "pid %d (the test), GPU hardware counters" % os.getpid()
    held = []
    try:
        for path in files:
            handle = open(path, "r+")
            held.append(handle)
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            handle.truncate(0)
            handle.write(holder + "\n")
            handle.flush()
        second = tmp_path / "second.dctx"
        run_profiled([PYTHON, PROGRAM, "2"], second, options=["--gpu-samples"], env=env,
                     check=0)
    finally:
        for handle in held:
            handle.close()
    tree = load_profile(second)
    status = tree.metadata["gpu_samples"]
    assert status.startswith("off: GPU GPU-"), status
    assert " is in use by %s: one process per GPU" % holder in status, status
    kernels = tree.find(kind="gpu_kernel")
    assert kernels, "the refused run traced no kernel"
    assert sum(k.incl("gpu_time") for k in kernels) > 0
    assert not [c for k in kernels for c in k.children if c.kind == "gpu_instruction"]
