"""A 4-rank CPU data-parallel job (torch.distributed, gloo, spawned
processes) where rank 2 does extra work on purpose at SLOW_RANK_LINE."""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 4
SLOW_RANK = 2


def worker(rank, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    x = torch.randn(32, 64)
    for _ in range(5):
        loss = model(x).square().mean()
        loss.backward()
        if rank == SLOW_RANK:
            extra = torch.randn(128, 128)
            for _ in range(40):
                extra = torch.tanh(extra @ extra)  # SLOW_RANK_LINE
        for p in model.parameters():
            dist.all_reduce(p.grad)
    dist.barrier()
    dist.destroy_process_group()


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29511
    # Like torchrun, each rank's environment holds its RANK from the start.
    context = mp.get_context("spawn")
    os.environ.update(WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    processes = []
    for rank in range(WORLD):
        os.environ["RANK"] = str(rank)
        processes.append(context.Process(target=worker, args=(rank, port)))
        processes[-1].start()
    del os.environ["RANK"]
    for process in processes:
        process.join()
        if process.exitcode != 0:
            sys.exit("a rank failed with status %s" % process.exitcode)
    print("ranks done")


if __name__ == "__main__":
    main()
