"""Data-parallel training of a benchmark model, one process per rank, for
the profiling of multi-rank jobs:

    torchrun --nproc-per-node N ddp_train.py --model resnet50|gpt2|mlp
             [--steps S] [--slow-rank R --slow-matmuls K] [--device cuda|cpu]

Ranks use NCCL when each has a GPU of its own, and gloo otherwise (several
ranks on one GPU, which NCCL refuses, or the CPU). Rank --slow-rank does
--slow-matmuls extra 1024x1024 matrix products before each forward pass on
purpose (SLOW_RANK_LINE), so the other ranks wait for it in the gradient
all-reduce of the backward pass. Each rank
prints `rank=R backend=B step_ms=T` (T = median step after warm-up, each
step synchronized)."""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_models import MODELS  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, help="per rank; the model's default otherwise")
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-matmuls", type=int, default=0)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if args.device == "cuda":
        gpus = torch.cuda.device_count()
        if gpus == 0:
            sys.exit("no GPU: use --device cpu")
        device = torch.device("cuda", local_rank % gpus)
        torch.cuda.set_device(device)
        backend = "nccl" if gpus >= world else "gloo"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend)

    build, default_batch = MODELS[args.model]
    torch.manual_seed(rank)
    model, data, target, loss_fn = build(args.batch or default_batch)
    model = model.to(device)
    data, target = data.to(device), target.to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if backend == "nccl" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    is_gpt2 = args.model == "gpt2"

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    extra = torch.randn(1024, 1024, device=device) / 32
    times = []
    for step in range(args.warmup + args.steps):
        begin = time.perf_counter()
        for _ in range(args.slow_matmuls if rank == args.slow_rank else 0):
            extra = torch.tanh(extra @ extra)  # SLOW_RANK_LINE
        optimizer.zero_grad(set_to_none=True)
        out = ddp(data, labels=target) if is_gpt2 else ddp(data)
        loss = loss_fn(out, target)
        loss.backward()  # BACKWARD_LINE
        optimizer.step()
        sync()
        if step >= args.warmup:
            times.append((time.perf_counter() - begin) * 1e3)
    dist.barrier()
    print("rank=%d backend=%s step_ms=%.2f" % (rank, backend, statistics.median(times)),
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
