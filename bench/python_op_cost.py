"""CPU cost of framework ops and of GPU API calls inside them, with Python
frames on the stack, without a framework or a GPU.

Like bench/event_cost.cc, but the ops are reported from a C loop
(bench/python_op_loop.cc) that Python calls through ctypes 20 Python frames
deep, so every op entered reads Python frames and every GPU API call inside
an op checks whether Python code runs inside it, as under torch. Each
configuration runs in its own process; processes of all configurations (and
of the --baseline build) alternate, several repeats in one invocation, and
the median nanoseconds per op are printed with what the profiler adds:

  ops                       flat ops entered from Python
  ops + 1 GPU call          a GPU API call's context query 25 frames inside
                            every op, as a launch through the driver asks it
  op > op + 1 GPU call      an op inside each op (a composite op and the
                            kernel op it calls) with the GPU call inside
  ... --native              the same with native frames (--native), the
                            ops 40 frames below the Python caller, as below
                            an interpreter and a dispatcher; the unwinder is
                            cfi-cache unless DEEPCONTEXT_UNWINDER says otherwise
  ops from 12 lines         one op per call, from twelve lines of one Python
                            function in turn: as a model calls one op (a
                            convolution) from many lines, twelve Python
                            paths under one native stack

    python3 bench/python_op_cost.py [--build build] [--baseline BUILD]
                                    [--ops 20000] [--repeats 7]

--baseline BUILD (repeatable) times the same configurations with another
build's runtime (say main's), interleaved: a runtime change's effect in one
run. The loop library always comes from --build (it uses the DLMonitor ABI
only, so an older build's runtime loads it too).
"""

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile

PYTHON_DEPTH = 20
OP_DEPTH = 40
GPU_DEPTH = 25
# name: (profiler on, native frames, nested ops, GPU calls per op, Python
# lines the ops come from: 1, or 12, one op per call)
CONFIGS = {
    "no profiler": (False, False, 0, 1, 1),
    "ops": (True, False, 0, 0, 1),
    "ops + 1 GPU call": (True, False, 0, 1, 1),
    "op > op + 1 GPU call": (True, False, 1, 1, 1),
    "ops --native": (True, True, 0, 0, 1),
    "ops + 1 GPU call --native": (True, True, 0, 1, 1),
    "op > op + 1 GPU call --native": (True, True, 1, 1, 1),
    "no profiler, ops from 12 lines": (False, False, 0, 0, 12),
    "ops from 12 lines": (True, False, 0, 0, 12),
    "ops from 12 lines --native": (True, True, 0, 0, 12),
}
# Each configuration's floor: the plain run its ops are like.
FLOOR_OF_LINES = {1: "no profiler", 12: "no profiler, ops from 12 lines"}


def from_twelve_lines(run_one, count):
    """Mean ns per op of `count` ops, each from the next of twelve lines."""
    # Twelve lines written out, not a loop: each op must be called from a
    # line of its own, so that the ops have twelve Python paths.
    total = 0.0
    rounds = max(count // 12, 1)
    for _ in range(rounds):
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
        total += run_one()
    return total / (rounds * 12)


def child(runtime, loop_library, config, ops):
    profiler_on, native, nested, gpu_calls, lines = CONFIGS[config]
    runtime_lib = ctypes.CDLL(runtime, mode=ctypes.RTLD_GLOBAL)
    loop = ctypes.CDLL(loop_library)
    loop.python_op_loop_run.restype = ctypes.c_double
    loop.python_op_loop_run.argtypes = [ctypes.c_int] * 5

    def run(count):
        if lines == 12:
            return from_twelve_lines(
                lambda: loop.python_op_loop_run(1, nested, gpu_calls, OP_DEPTH, GPU_DEPTH), count)
        return loop.python_op_loop_run(count, nested, gpu_calls, OP_DEPTH, GPU_DEPTH)

    def at_depth(depth, body):
        return body() if depth <= 0 else at_depth(depth - 1, body)

    if profiler_on:
        if runtime_lib.deepcontext_start() != 0:
            raise SystemExit("deepcontext_start failed")
        if native:
            runtime_lib.dlmonitor_native_enable(1)
    at_depth(PYTHON_DEPTH, lambda: run(min(ops, 2000)))  # first-time costs
    times = [at_depth(PYTHON_DEPTH, lambda: run(ops)) for _ in range(5)]
    if profiler_on:
        if native:
            runtime_lib.dlmonitor_native_enable(0)
        runtime_lib.deepcontext_stop()
    print(statistics.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--baseline", action="append", default=[],
                        help="also time the runtime of this other build (repeatable)")
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", default="", help="configurations whose name contains this")
    parser.add_argument("--child", nargs=3, metavar=("RUNTIME", "LOOP", "CONFIG"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.ops)
        return
    loop_library = os.path.abspath(os.path.join(args.build, "lib", "libpython_op_loop.so"))
    builds = {"this build": args.build}
    for index, baseline in enumerate(args.baseline):
        builds["baseline %d" % (index + 1) if len(args.baseline) > 1 else "baseline"] = baseline
    for name, build in builds.items():
        if not os.path.exists(os.path.join(build, "lib", "libdeepcontext.so")):
            raise SystemExit("%s: no lib/libdeepcontext.so in %s" % (name, build))
    if not os.path.exists(loop_library):
        raise SystemExit("no %s: build the python_op_loop target" % loop_library)
    configs = [c for c in CONFIGS if c.startswith("no profiler") or args.only in c]
    variants = [(b, c) for b in builds for c in configs
                if b == "this build" or not c.startswith("no profiler")]
    env = dict(os.environ)
    env.setdefault("DEEPCONTEXT_UNWINDER", "cfi-cache")
    times = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            # Rotate the order so that no variant always runs first.
            order = variants[repeat % len(variants):] + variants[:repeat % len(variants)]
            for build, config in order:
                runtime = os.path.abspath(os.path.join(builds[build], "lib", "libdeepcontext.so"))
                out = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--ops", str(args.ops),
                     "--child", runtime, loop_library, config],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=scratch,
                    check=False)
                if out.returncode != 0:
                    raise SystemExit("%s, %s failed:\n%s" % (build, config, out.stderr.decode()))
                times[(build, config)].append(float(out.stdout.decode().split()[-1]))
    floors = {lines: statistics.median(times[("this build", name)])
              for lines, name in FLOOR_OF_LINES.items()}
    print("Median ns per op of %d repeats x %d ops (Python %d frames deep; unwinder %s)"
          % (args.repeats, args.ops, PYTHON_DEPTH, env["DEEPCONTEXT_UNWINDER"]))
    baselines = [b for b in builds if b != "this build"]
    for baseline in baselines:
        print("%s: %s" % (baseline, builds[baseline]))
    header = "| configuration | this build | added |"
    rule = "|---|---|---|"
    for baseline in baselines:
        header += " %s | added | added, this / %s |" % (baseline, baseline)
        rule += "---|---|---|"
    print(header)
    print(rule)
    for config in configs:
        floor = floors[CONFIGS[config][4]]
        mine = statistics.median(times[("this build", config)])
        row = "| %s | %.1f | %+.1f |" % (config, mine, mine - floor)
        for baseline in baselines:
            if config.startswith("no profiler"):
                row += " | | |"
                continue
            base = statistics.median(times[(baseline, config)])
            ratio = (mine - floor) / (base - floor) if base > floor else float("nan")
            row += " %.1f | %+.1f | %.3f |" % (base, base - floor, ratio)
        print(row)


if __name__ == "__main__":
    main()
