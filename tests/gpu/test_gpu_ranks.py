"""A data-parallel GPU job under `deepcontext run -- torchrun`: one profile
per rank with every kernel under a Python line, the gradient all-reduce in
the backward phase, and the merge naming the rank made slow on purpose.

Two ranks: on one GPU they share it through gloo (NCCL refuses two ranks on
one device); with two GPUs or more, NCCL, and its kernels are checked too."""

import glob
import os
import re
import socket
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from conftest import PYTHON, cli, load_profile, run_profiled  # noqa: E402
from kernel_queries import kernels, kernels_at, launches  # noqa: E402
from markers import marker_line  # noqa: E402

WORKLOAD = os.path.join(HERE, "..", "..", "bench", "workloads", "ddp_train.py")
RANKS = 2
SLOW_RANK = 1


def _device_count():
    probe = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.device_count())"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return int(probe.stdout or 0) if probe.returncode == 0 else 0


DEVICES = _device_count()
pytestmark = pytest.mark.skipif(DEVICES == 0, reason="no CUDA device")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ranks")
    out = folder / "job.dctx"
    result = run_profiled(
        [PYTHON, "-m", "torch.distributed.run", "--nproc-per-node", str(RANKS),
         "--master-port", str(_free_port()), WORKLOAD, "--model", "mlp", "--steps", "10",
         "--slow-rank", str(SLOW_RANK), "--slow-matmuls", "300"], out, timeout=600)
    printed = result.stdout.decode()
    assert printed.count("step_ms=") == RANKS, (printed, result.stderr.decode()[-3000:])
    files = sorted(glob.glob(str(folder / "job.rank*.dctx")))
    by_rank = {}
    for path in files:
        rank = int(re.search(r"\.rank(\d+)\.", os.path.basename(path)).group(1))
        tree = load_profile(path)
        # torchrun's own processes carry no RANK; helper processes a rank
        # starts do: the rank's profile is the one with its training ops.
        if any(n.kind == "operator" and n.name == "aten::addmm" for n in tree.nodes):
            assert rank not in by_rank, files
            by_rank[rank] = (path, tree)
    assert sorted(by_rank) == list(range(RANKS)), files
    backend = re.search(r"backend=(\w+)", printed).group(1)
    return folder, by_rank, backend


def test_every_rank_attributes_every_record(job):
    _, by_rank, _ = job
    for rank, (path, tree) in by_rank.items():
        meta = tree.metadata
        assert meta.get("gpu_dropped_records", "0") == "0", (rank, meta)
        assert int(meta.get("gpu_unattributed_records", "0")) == 0, (rank, meta)
        ks = kernels(tree)
        assert ks, rank
        # Every kernel sits under a Python line of the job, or in the
        # backward phase: DDP's reducer scales gradients from an autograd
        # hook (torch::distributed::reducer::mul_out), which no forward
        # operator created, so it has no line to be grafted under.
        lost = [k for k in ks if not any(a.kind == "python" or
                                         (a.kind == "phase" and a.name == "[backward]")
                                         for a in k.ancestors())]
        assert not lost, (rank, [repr(k) for k in lost[:5]])


def test_backward_kernels_and_the_all_reduce_sit_in_the_backward_phase(job):
    _, by_rank, backend = job
    for rank, (_, tree) in by_rank.items():
        backward = kernels_at(tree, WORKLOAD, "BACKWARD_LINE")
        assert launches(backward) > 0, rank
        reduce_ops = [n for n in tree.nodes if n.kind == "operator" and "allreduce" in
                      n.name.replace("_", "").lower()]
        assert reduce_ops, (rank, sorted({n.name for n in tree.nodes if n.kind == "operator"}))
        # DDP reduces gradients from autograd hooks while backward runs.
        assert any(any(a.kind == "phase" and a.name == "[backward]" for a in op.ancestors())
                   for op in reduce_ops), (rank, [repr(op) for op in reduce_ops])
        if backend == "nccl":
            nccl = [k for k in kernels(tree) if "nccl" in k.name.lower()]
            assert nccl and all(any(a.kind == "python" for a in k.ancestors()) for k in nccl)


def test_the_merge_names_the_slow_rank_and_its_line(job):
    folder, by_rank, _ = job
    slow_path, slow_tree = by_rank[SLOW_RANK]
    assert launches(kernels_at(slow_tree, WORKLOAD, "SLOW_RANK_LINE")) >= 300 * 10
    fast_tree = by_rank[0][1]
    assert launches(kernels_at(fast_tree, WORKLOAD, "SLOW_RANK_LINE")) == 0
    merged = folder / "merged.dctx"
    cli("merge", *[path for path, _ in by_rank.values()], "-o", merged)
    report = cli("report", merged, "--metric", "gpu_time", "--width", "220").stdout.decode()
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("Imbalance across %d ranks" % RANKS))
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        rows.append(line)
    where = "ddp_train.py:%d" % marker_line(WORKLOAD, "SLOW_RANK_LINE")
    slow = [row for row in rows[:3] if where in row and "rank %d" % SLOW_RANK in row]
    assert slow and "1/%d" % RANKS in slow[0], report[-4000:]
