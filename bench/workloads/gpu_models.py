"""GPU training steps of three models, for overhead and accuracy checks.

    python3 gpu_models.py --model resnet50|gpt2|mlp [--steps N] [--torch-profiler OUT.json]
    python3 gpu_models.py --model launch-torch|launch-triton [--launches K] [--proton OUT]
    python3 gpu_models.py --model mlp --ab-rounds 10 [--steps N]

Prints `model=M steps=N step_ms=T ... cpu_side_ms=C` (T = median step time
after warm-up, synchronized; C = its median CPU side, the time a step took
to queue its work before the synchronize). With --torch-profiler, runs
under torch.profiler (with_stack=True) and writes per-op self device time
and kernel counts (from torch's own events) to OUT.json;
--deepcontext-region profiles the same timed steps with
deepcontext.profile() for comparison, and --floor F under one of the
floors below (F = floor, cupti-records, cupti, floor+cupti,
floor+records or none), in a process of its own.

--ab-rounds R alternates, in this one process, N steps without a profiler
and N steps inside deepcontext.profile() per --ab-variants entry, R times,
and prints the median step of each (`ab_plain_ms`, `ab_<variant>_ms`) and of
the plain steps before the first region (`ab_first_plain_ms`: later plain
steps slower after a profiler's regions than after `none` regions would
be a cost the profiler left behind; on GPU instances both drift).
`ab_<variant>_steady_ms` is the mean step after the first
--ab-settle-steps of each block, and `ab_<variant>_start_ms` what those
first steps took beyond steady ones, per block: starting a region (CUPTI
attaching, first launches) against running one. Process start-up and
machine drift then stay out of the ratios. Variants: sampled, exact, off
(the region's cpu_time), gpu-off (sampled, DEEPCONTEXT_GPU=0: no CUPTI),
sampled-10ms (DEEPCONTEXT_CPU_SAMPLE_US=10000), windows-10 and windows-25
(sampled, tracing in windows of --trace-window-ms covering 10 % or 25 % of
each region: use regions several windows long), windows-min (0.1 %: the
cost left between windows), windows-min-gpu-off (the same without CUPTI),
native and native-gpu-off (sampled and gpu-off with native frames),
native-no-trails (native with DEEPCONTEXT_INSIDE_TRAILS=0 and
DEEPCONTEXT_ENTRY_TRAILS=0: every op entry and GPU call inside an op
unwound, none answered by a trail) and floor (no deepcontext: a
RecordFunction callback that does nothing, what torch itself spends on
observing each op; see record_function_floor.py), floor-ids (the same
callback asking for RecordFunction's ids), cupti-records and cupti
(no deepcontext: CUPTI tracing every kernel, copy and memset, records
thrown away, without or with the runtime's callbacks, empty; see
cupti_floor.py), floor+cupti (both floors: what any profiler built on
RecordFunction and CUPTI pays before doing any work), floor+records
(floor and cupti-records: the same without CUPTI's callbacks, the least a
profiler that observes every op and times every kernel pays) and none (a
region with no profiler at all: how far the plain steps after regions
drift from those before any, when no region could have left a cost
behind, the control for ab_first_plain_ms). Other profilers'
regions, for comparisons without process-to-process scatter: proton
(triton.profiler.start(context="python") ... finalize()) and torch-profiler
(torch.profiler.profile(with_stack=True), CPU and, on a GPU, CUDA activities).
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def resnet50(batch):
    import torchvision
    model = torchvision.models.resnet50()
    data = torch.randn(batch, 3, 224, 224)
    target = torch.randint(0, 1000, (batch,))
    return model, data, target, lambda out, y: F.cross_entropy(out, y)


def gpt2(batch):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=12, n_head=12, n_embd=768, n_positions=512)
    model = GPT2LMHeadModel(config)
    tokens = torch.randint(0, config.vocab_size, (batch, 512))
    return model, tokens, tokens, lambda out, y: out.loss


class TinyMLP(nn.Module):
    """Many tiny layers: the CPU launches kernels faster than the GPU needs."""

    def __init__(self, layers=48, width=64):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return x.sum(dim=1)


def mlp(batch):
    model = TinyMLP()
    data = torch.randn(batch, 64)
    return model, data, torch.randn(batch), lambda out, y: F.mse_loss(out, y)


MODELS = {"resnet50": (resnet50, 64), "gpt2": (gpt2, 8), "mlp": (mlp, 32)}

# Launch-bound microbenchmarks: each step launches --launches tiny kernels
# (one element each), through a torch op or through a Triton kernel.
LAUNCH_MODELS = ("launch-torch", "launch-triton")


def launch_step(model, launches, device):
    """The step function of a launch microbenchmark."""
    x = torch.zeros(1, device=device)
    if model == "launch-torch":
        def step():
            for _ in range(launches):
                x.add_(1.0)
        return step
    import triton
    import triton.language as tl

    @triton.jit
    def add_one_kernel(ptr):
        tl.store(ptr, tl.load(ptr) + 1.0)

    def step():
        for _ in range(launches):
            add_one_kernel[(1,)](x)  # TRITON_LAUNCH_LINE
    return step


@contextlib.contextmanager
def perf_enabled():
    """Under `perf record -D -1 --control fifo:CTL,ACK` with PERF_CTL_FIFO=CTL
    and PERF_ACK_FIFO=ACK in the environment, samples the timed steps only:
    not start-up, compilation or warm-up."""
    control, ack = os.environ.get("PERF_CTL_FIFO"), os.environ.get("PERF_ACK_FIFO")
    if not control:
        yield
        return

    def send(command):
        with open(control, "w") as fifo:
            fifo.write(command + "\n")
        if ack:
            with open(ack) as reply:
                reply.readline()

    send("enable")
    try:
        yield
    finally:
        send("disable")


def train_step(model, optimizer, data, target, loss_fn, is_gpt2):
    optimizer.zero_grad(set_to_none=True)
    out = model(data, labels=target) if is_gpt2 else model(data)
    loss = loss_fn(out, target)
    loss.backward()
    optimizer.step()


# --ab-variants: (cpu_time, GPU tracing on, CPU sampling interval in us or
# None for the default, traced fraction). The floors are not deepcontext
# regions: "floor" observes every op through a RecordFunction callback that
# does nothing (record_function_floor.py); "cupti-records" traces every
# kernel, copy and memset with CUPTI and throws the records away,
# "cupti" adds the runtime's CUPTI callbacks, empty (cupti_floor.py); and
# "floor+cupti" is both, what any profiler built on RecordFunction and
# CUPTI pays before doing anything. "floor+records" leaves out the CUPTI
# callbacks: what a profiler that still observes every op and times every
# kernel pays at the least, had it another way to join kernels to launches.
# "floor-ids" asks RecordFunction for ids, as the runtime once did to pair
# an op's start with its end: what those ids cost. "none" observes
# nothing: plain steps in a region, the control for the others.
# Each floor: (RecordFunction callback: "plain", "ids" or None, CUPTI with
# its callbacks: True, with records only: False, not at all: None).
FLOOR_VARIANTS = {"floor": ("plain", None), "floor-ids": ("ids", None),
                  "cupti-records": (None, False), "cupti": (None, True),
                  "floor+cupti": ("plain", True), "floor+records": ("plain", False),
                  "none": (None, None)}
AB_VARIANTS = {**{name: None for name in FLOOR_VARIANTS},
               "sampled": ("sampled", True, None, 1.0),
               "exact": ("exact", True, None, 1.0), "off": ("off", True, None, 1.0),
               "gpu-off": ("sampled", False, None, 1.0),
               "sampled-10ms": ("sampled", True, 10000, 1.0),
               "windows-10": ("sampled", True, None, 0.1),
               "windows-25": ("sampled", True, None, 0.25),
               "windows-min": ("sampled", True, None, 0.001),
               "windows-min-gpu-off": ("sampled", False, None, 0.001),
               "native": ("sampled", True, None, 1.0),
               "native-gpu-off": ("sampled", False, None, 1.0),
               "native-no-trails": ("sampled", True, None, 1.0)}
# Other profilers' regions: not deepcontext, for comparing with it in one
# process. Each starts and ends its profiler around the region's steps.
OTHER_PROFILERS = ("proton", "torch-profiler")
AB_VARIANTS.update({name: None for name in OTHER_PROFILERS})
# Variants profiled with native frames (deepcontext.profile(native=True)):
# against "sampled" and "gpu-off", what native frames cost at op entries
# alone (gpu-off: no GPU calls to capture) and with GPU calls.
NATIVE_VARIANTS = ("native", "native-gpu-off", "native-no-trails")
# What native-no-trails sets to 0 (read at each start of native frames).
TRAIL_SWITCHES = ("DEEPCONTEXT_INSIDE_TRAILS", "DEEPCONTEXT_ENTRY_TRAILS")


class FloorRegions:
    """Regions of the FLOOR_VARIANTS named (each loads only what those
    need): `with regions("floor+cupti"): ...`."""

    def __init__(self, names):
        floors = [FLOOR_VARIANTS[name] for name in names]
        self._floor = self._cupti = None
        if any(record_function for record_function, _ in floors):
            from record_function_floor import RecordFunctionFloor
            self._floor = RecordFunctionFloor(torch)
        if any(callbacks is not None for _, callbacks in floors):
            from cupti_floor import CuptiFloor
            self._cupti = CuptiFloor()

    @contextlib.contextmanager
    def __call__(self, name):
        record_function, callbacks = FLOOR_VARIANTS[name]
        with contextlib.ExitStack() as stack:
            if record_function:
                stack.enter_context(self._floor.enabled(ids=record_function == "ids"))
            if callbacks is not None:
                stack.enter_context(self._cupti.enabled(callbacks=callbacks))
            yield


def alternate(args, timed_steps):
    """--ab-rounds: plain steps and deepcontext.profile() regions in turn."""
    import tempfile
    variants = args.ab_variants.split(",")
    unknown = [name for name in variants if name not in AB_VARIANTS]
    if unknown:
        raise SystemExit("unknown --ab-variants %s (known: %s)"
                         % (",".join(unknown), ",".join(AB_VARIANTS)))
    with tempfile.TemporaryDirectory(prefix="dc-ab-") as work:
        alternate_in(args, timed_steps, variants, work)


def alternate_in(args, timed_steps, variants, work):
    """alternate(), the regions writing their profiles (and the other
    profilers their output) into the folder `work`."""
    import deepcontext
    path = os.path.join(work, "region.dctx")
    floors = [FLOOR_VARIANTS[name] for name in variants if name in FLOOR_VARIANTS]
    if "torch-profiler" in variants and any(callbacks is not None for _, callbacks in floors):
        # Refused before any step: after a torch.profiler region CUPTI
        # refused the floor's setup (torch 2.11, CUPTI 13), which stopped
        # the run half-way. DeepContext's own regions still start after it.
        raise SystemExit("--ab-variants: torch-profiler regions cannot be combined with the "
                         "CUPTI floors (cupti-records, cupti, floor+cupti, floor+records): "
                         "time them in separate runs")
    floor_region = FloorRegions([name for name in variants if name in FLOOR_VARIANTS])
    trails_given = {name: os.environ.get(name) for name in TRAIL_SWITCHES}

    @contextlib.contextmanager
    def region(name):
        if name in FLOOR_VARIANTS:
            with floor_region(name):
                yield
            return
        if name in OTHER_PROFILERS:
            with other_profiler(name, args.device, os.path.dirname(path)):
                yield
            return
        cpu_time, gpu, sample_us, fraction = AB_VARIANTS[name]
        # Read when a region starts (runtime/profiler/gpu_source.cc) and
        # when its sampling thread starts (runtime/profiler/op_metrics.cc).
        if gpu:
            os.environ.pop("DEEPCONTEXT_GPU", None)
        else:
            os.environ["DEEPCONTEXT_GPU"] = "0"
        if sample_us is None:
            os.environ.pop("DEEPCONTEXT_CPU_SAMPLE_US", None)
        else:
            os.environ["DEEPCONTEXT_CPU_SAMPLE_US"] = str(sample_us)
        # Read when native frames are turned on, at each region's start;
        # other regions keep what the process was given.
        for switch, given in trails_given.items():
            if name == "native-no-trails":
                os.environ[switch] = "0"
            elif given is None:
                os.environ.pop(switch, None)
            else:
                os.environ[switch] = given
        with deepcontext.profile(path, cpu_time=cpu_time, trace_fraction=fraction,
                                 trace_window_ms=args.trace_window_ms,
                                 native=name in NATIVE_VARIANTS):
            yield

    first_plain = timed_steps(args.steps)
    # The first regions build or load the adapter and start CUPTI: not timed.
    for name in variants:
        with region(name):
            timed_steps(args.warmup)
    # Each block of steps (one region, or the plain steps between regions)
    # is kept apart: its first steps carry what starting a region costs.
    plain, profiled = [], {name: [] for name in variants}
    # The CPU side of each step: how long it took to queue the step's work.
    # Where the GPU is the bottleneck the step hides a profiler's CPU cost
    # in its wait for the GPU; this time does not.
    issued = {name: [] for name in ["plain"] + variants}
    # --region-log: when each block ran, on the clock `perf record -k
    # CLOCK_MONOTONIC` stamps its samples with (bench/region_samples.py).
    spans = []

    def timed_block(name):
        start = time.clock_gettime(time.CLOCK_MONOTONIC)
        times = timed_steps(args.steps, issued[name], name)
        spans.append({"name": name, "start": start,
                      "end": time.clock_gettime(time.CLOCK_MONOTONIC), "steps": len(times)})
        return times

    for _ in range(args.ab_rounds):
        plain.append(timed_block("plain"))
        for name in variants:
            with region(name):
                profiled[name].append(timed_block(name))
    if args.step_log:
        write_step_log(args.step_log, {"plain": plain, **profiled})
    if args.region_log:
        with open(args.region_log, "w") as f:
            json.dump(spans, f)
    settle = min(args.ab_settle_steps, args.steps - 1)
    fields = ["ab_first_plain_ms=%.3f" % (1000 * statistics.median(first_plain))]
    for name, blocks in [("plain", plain)] + list(profiled.items()):
        fields += ["ab_%s_%s=%.3f" % (name, key, value)
                   for key, value in block_summary(blocks, settle).items()]
        fields.append("ab_%s_issue_ms=%.3f" % (name, 1000 * statistics.median(issued[name])))
    print("model=%s steps=%d rounds=%d device=%s %s" % (
        args.model, args.steps, args.ab_rounds, device_token(args.device), " ".join(fields)))


def device_token(device):
    """What ran the steps, as one key=value token: the GPU's name with its
    spaces as underscores ("NVIDIA_H100_80GB_HBM3"), or the device given."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device)).replace(" ", "_")
    return device


def cupti_for_proton(work_dir, maps_path="/proc/self/maps"):
    """Proton loads Triton's own CUPTI, a second copy beside the one torch
    (and DeepContext) use. Once the process's CUPTI has traced, the second
    copy cannot subscribe any more (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_
    SUPPORTED, also after cuptiFinalize), so Proton regions alternating with
    others load the process's CUPTI: TRITON_CUPTI_LIB_PATH names a folder
    holding a libcupti.so link to it. Returns that library, or None where
    the process has no CUPTI loaded (Proton then loads its own)."""
    loaded = set()
    with open(maps_path) as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libcupti.so"):
                loaded.add(path)
    if len(loaded) != 1:
        return None
    library = loaded.pop()
    folder = os.path.join(work_dir, "cupti-for-proton")
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, "libcupti.so")
    if not os.path.lexists(link):
        os.symlink(library, link)
    os.environ["TRITON_CUPTI_LIB_PATH"] = folder
    return library


@contextlib.contextmanager
def other_profiler(name, device, work_dir):
    """One region of another profiler (OTHER_PROFILERS), set up as the
    separate-process columns of gpu_overhead.py --table set it up, except
    that Proton shares the process's CUPTI (cupti_for_proton)."""
    if name == "proton":
        import triton.profiler as proton
        if "TRITON_CUPTI_LIB_PATH" not in os.environ:
            library = cupti_for_proton(work_dir)
            print("proton regions load %s" % (library or "Triton's own CUPTI"),
                  file=sys.stderr)
        proton.start(os.path.join(work_dir, "proton-region"), context="python")
        try:
            yield
        finally:
            proton.finalize()
        return
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, with_stack=True):
        yield


def write_step_log(path, blocks_by_name):
    """--step-log: every step's time in ms, per block, under the name of
    what ran it ("plain", a region, or "timed"), so that where slow steps
    fall (every Nth step, a block's start, one region) can be read off."""
    with open(path, "w") as log:
        json.dump({name: [[round(1000 * t, 4) for t in block] for block in blocks]
                   for name, blocks in blocks_by_name.items()}, log)


def block_summary(blocks, settle):
    """Step times (s) of blocks of steps (a region each, or the plain steps
    between regions) summed up in ms: the median and mean step; the mean
    step after the first `settle` steps of each block (what a long profile
    pays per step); and what those first steps took beyond that block's
    steady steps, per block (starting a region: CUPTI attaching, first
    launches)."""
    every = [t for block in blocks for t in block]
    steady = [t for block in blocks for t in block[settle:]]
    start = [sum(block[:settle]) - settle * statistics.fmean(block[settle:])
             for block in blocks]
    # Under trace windows most steps run untraced: their median hides the
    # traced ones, the mean (total time over steps) does not.
    return {"ms": 1000 * statistics.median(every), "mean_ms": 1000 * statistics.fmean(every),
            "steady_ms": 1000 * statistics.fmean(steady),
            "start_ms": 1000 * statistics.fmean(start)}


def non_negative(text):
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more, not %d" % value)
    return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(MODELS) + list(LAUNCH_MODELS), required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=1,
                        help="time BLOCKS blocks of --steps steps in this process: step_ms "
                             "is then the median of the blocks' medians (repeats without "
                             "paying process start-up again)")
    parser.add_argument("--torch-profiler", metavar="OUT_JSON")
    parser.add_argument("--torch-profiler-timing-only", action="store_true",
                        help="with --torch-profiler: time the steps only, skip the per-op "
                             "summary (events() over every op and kernel takes long)")
    parser.add_argument("--torch-profiler-activities", default="cpu,cuda",
                        help="activities torch.profiler records (cpu, cuda or both)")
    parser.add_argument("--deepcontext-region", metavar="OUT_DCTX",
                        help="profile only the timed steps with deepcontext.profile()")
    parser.add_argument("--ab-rounds", type=int, default=0,
                        help="alternate plain steps and deepcontext.profile() regions")
    parser.add_argument("--ab-variants", default="sampled",
                        help="regions of each --ab-rounds round: " + ", ".join(AB_VARIANTS))
    parser.add_argument("--ab-settle-steps", type=non_negative, default=3,
                        help="with --ab-rounds: first steps of each block counted as its "
                             "start, not its steady state")
    parser.add_argument("--trace-window-ms", type=float, default=50,
                        help="window length of the windows-* variants")
    parser.add_argument("--region-log", metavar="OUT_JSON",
                        help="with --ab-rounds: write when each timed block started and "
                             "ended (CLOCK_MONOTONIC seconds), for bench/region_samples.py")
    parser.add_argument("--step-log", metavar="OUT_JSON",
                        help="write every timed step's time (ms) there, per block")
    parser.add_argument("--thread-log", metavar="OUT_JSON",
                        help="write, for every timed step (with --ab-rounds: of every "
                             "block, under its name), how long each thread ran and waited "
                             "for a CPU and where it ran (workloads/thread_log.py; "
                             "bench/thread_steps.py prints it)")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu to try the script")
    parser.add_argument("--launches", type=int, default=5000,
                        help="kernels per step of the launch-* microbenchmarks")
    parser.add_argument("--floor", choices=sorted(FLOOR_VARIANTS),
                        help="time the steps under one floor (see --ab-variants): what "
                             "any profiler on the same interfaces pays, in its own process")
    parser.add_argument("--proton", metavar="OUT",
                        help="run the timed steps under Triton's Proton profiler "
                             "(triton.profiler, context=\"python\"), writing OUT.hatchet")
    parser.add_argument("--proton-mode", default=None,
                        help="with --proton: Proton's mode on its cupti backend, e.g. "
                             "pcsampling (instruction sampling)")
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device(args.device)
    if args.model in LAUNCH_MODELS:
        step = launch_step(args.model, args.launches, device)
    else:
        build, batch = MODELS[args.model]
        model, data, target, loss_fn = build(batch)
        model, data, target = model.to(device), data.to(device), target.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        is_gpt2 = args.model == "gpt2"

        def step():
            train_step(model, optimizer, data, target, loss_fn, is_gpt2)

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    threads = None
    if args.thread_log:
        from thread_log import ThreadLog
        try:
            threads = ThreadLog()
        except RuntimeError as error:
            parser.error("--thread-log: %s" % error)

    def timed_steps(count, issued=None, block=None):
        """Each step's time to its end on the GPU; with `issued`, also the
        time its CPU side took to queue the work (up to the synchronize).
        Steps of a named `block` go into the --thread-log, with the
        threads' counters around each; warm-up steps are not named."""
        logged = threads is not None and block is not None
        times = []
        for _ in range(count):
            if logged:
                threads.step_started()
            start = time.perf_counter()
            step()
            queued = time.perf_counter()
            sync()
            times.append(time.perf_counter() - start)
            if issued is not None:
                issued.append(queued - start)
            if logged:
                threads.step_ended(1000 * times[-1], block)
        return times

    for _ in range(args.warmup):
        step()
    sync()

    if args.ab_rounds > 0:
        alternate(args, timed_steps)
        if threads is not None:
            threads.write(args.thread_log)
        return

    profiler = None
    if args.floor:
        profiler = FloorRegions([args.floor])(args.floor)
        profiler.__enter__()
    elif args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        wanted = args.torch_profiler_activities.split(",")
        activities = [getattr(ProfilerActivity, name.upper()) for name in wanted]
        profiler = profile(activities=activities, with_stack="cpu" in wanted)
        profiler.__enter__()
    elif args.deepcontext_region:
        import deepcontext
        profiler = deepcontext.profile(args.deepcontext_region)
        profiler.__enter__()
    elif args.proton:
        import triton.profiler as proton
        if args.proton_mode:
            proton.start(args.proton, context="python", backend="cupti", mode=args.proton_mode)
        else:
            proton.start(args.proton, context="python")
    blocks = max(args.blocks, 1)
    issued = []
    with perf_enabled():
        times = timed_steps(args.steps * blocks, issued, "timed")
    if args.proton:
        proton.finalize()
    elif args.floor or args.deepcontext_region:
        profiler.__exit__(None, None, None)
    elif profiler is not None and args.torch_profiler_timing_only:
        profiler.__exit__(None, None, None)
    elif profiler is not None:
        profiler.__exit__(None, None, None)
        # Self device time and kernel count per op name, from torch's own
        # events: kernels are charged to the op that launched them.
        per_op = {}
        for event in profiler.events():
            kernels = getattr(event, "kernels", None) or []
            if not kernels or getattr(event, "device_type", None) is None:
                continue
            if "CUDA" in str(event.device_type):
                continue  # device-side events carry no launching op
            entry = per_op.setdefault(event.name, {"self_device_time_us": 0.0, "kernels": 0})
            entry["self_device_time_us"] += sum(k.duration for k in kernels)
            entry["kernels"] += len(kernels)
        with open(args.torch_profiler, "w") as f:
            json.dump({"per_op": per_op, "steps": args.steps}, f)
    timed_blocks = [times[b * args.steps:(b + 1) * args.steps] for b in range(blocks)]
    if args.step_log:
        write_step_log(args.step_log, {"timed": timed_blocks})
    if threads is not None:
        threads.write(args.thread_log)
    # The spread shows steps that a median hides (buffer flushes, warm-up).
    ordered = sorted(times)
    block_medians = [statistics.median(block) for block in timed_blocks]
    print("model=%s steps=%d step_ms=%.3f step_p10_ms=%.3f step_p90_ms=%.3f step_mean_ms=%.3f"
          " cpu_side_ms=%.3f"
          % (args.model, args.steps, 1000 * statistics.median(block_medians),
             1000 * ordered[len(ordered) // 10], 1000 * ordered[(9 * len(ordered)) // 10],
             1000 * statistics.fmean(times), 1000 * statistics.median(issued)))
    if blocks > 1:
        print("block_ms=" + ",".join("%.3f" % (1000 * m) for m in block_medians))
    if args.steps >= 200:  # how the step time settles over a long run
        print("median_ms_per_100_steps=" + ",".join(
            "%.2f" % (1000 * statistics.median(times[i:i + 100]))
            for i in range(0, len(times) - 99, 100)))


if __name__ == "__main__":
    main()
