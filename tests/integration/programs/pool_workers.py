"""A multiprocessing pool in the context named by argv[1] (fork or spawn)
whose argv[2] workers all run a task (they meet at a barrier); the pool's
exit then terminates workers that may be exiting already."""
import multiprocessing
import sys

_barrier = None


def _init(barrier):
    global _barrier
    _barrier = barrier


def meet(value):
    _barrier.wait(timeout=60)
    return value * value


if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    workers = int(sys.argv[2])
    barrier = context.Barrier(workers)
    with context.Pool(workers, initializer=_init, initargs=(barrier,)) as pool:
        print(sum(pool.map(meet, range(workers), chunksize=1)))
