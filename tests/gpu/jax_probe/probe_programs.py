"""Runs small jitted programs under record_probe.so and saves what the
profiler's JAX support is built on: the compiled HLO text and proto of each
module, the names jaxlib offers to hook compilation, and (mode "reference")
jax.profiler's per-HLO-operation device times. Usage:
  probe_programs.py record|record_large|nested|reference OUTDIR"""

import base64
import gzip
import glob
import inspect
import json
import os
import sys
import threading
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def mlp_init(key, width, depth):
    keys = jax.random.split(key, depth)
    return [jax.random.normal(k, (width, width), jnp.float32) * (1.0 / width ** 0.5) for k in keys]


def mlp_forward(params, x):
    for i, w in enumerate(params):
        with jax.named_scope("layer%d" % i):
            x = jnp.tanh(x @ w)
    return x


def mlp_loss(params, x):
    return jnp.mean(mlp_forward(params, x) ** 2)


@jax.jit
def train_step(params, x):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x)
    return loss, [w - 0.01 * g for w, g in zip(params, grads)]


def save_module(out, tag, fn, *args):
    compiled = fn.lower(*args).compile()
    with open(os.path.join(out, "hlo_%s.txt" % tag), "w") as f:
        f.write(compiled.as_text())
    info = {"tag": tag}
    try:
        mods = compiled.runtime_executable().hlo_modules()
        info["modules"] = []
        for m in mods:
            entry = {"name": m.name, "dir": [a for a in dir(m) if not a.startswith("__")]}
            for attr in ("unique_id", "id", "program_id", "fingerprint"):
                if hasattr(m, attr):
                    try:
                        v = getattr(m, attr)
                        entry[attr] = str(v() if callable(v) else v)
                    except Exception as e:  # noqa: BLE001
                        entry[attr] = "error: %r" % e
            proto = m.as_serialized_hlo_module_proto()
            entry["proto_b64"] = base64.b64encode(proto).decode()
            info["modules"].append(entry)
    except Exception as e:  # noqa: BLE001
        info["error"] = repr(e)
    return info


def jax_internals():
    from jax._src import compiler
    info = {"compiler": {}}
    for name in dir(compiler):
        if "compile" in name.lower():
            obj = getattr(compiler, name)
            try:
                info["compiler"][name] = str(inspect.signature(obj))
            except (TypeError, ValueError):
                info["compiler"][name] = type(obj).__name__
    try:
        info["source_backend_compile_and_load"] = inspect.getsource(compiler.backend_compile_and_load)
    except Exception as e:  # noqa: BLE001
        info["source_backend_compile_and_load"] = repr(e)
    try:
        info["source_compile_or_get_cached"] = inspect.getsource(compiler.compile_or_get_cached)[:6000]
    except Exception as e:  # noqa: BLE001
        info["source_compile_or_get_cached"] = repr(e)
    return info


def record(out):
    key = jax.random.PRNGKey(0)
    meta = {"python_tid": threading.get_native_id(), "jax": jax.__version__,
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "nvtx_injection": os.environ.get("NVTX_INJECTION64_PATH", "")}
    params = mlp_init(key, 256, 3)
    x = jax.random.normal(key, (128, 256), jnp.float32)
    marks = []
    for step in range(4):
        marks.append(("train_step", step, time.monotonic_ns()))
        loss, params = train_step(params, x)
        loss.block_until_ready()
    meta["marks"] = marks
    meta["modules"] = [save_module(out, "train_step", train_step, params, x)]
    meta["internals"] = jax_internals()
    with open(os.path.join(out, "meta_%s.json" % os.environ.get("PROBE_TAG", "x")), "w") as f:
        json.dump(meta, f, indent=1)
    print("record done loss=%.5f" % float(loss))


def record_large(out):
    """2 steps of the issue's MLP (8 layers of 4096, batch 1024): what its
    command buffer records (cuBLAS GEMMs among the commands)."""
    key = jax.random.PRNGKey(0)
    params = mlp_init(key, 4096, 8)
    x = jax.random.normal(key, (1024, 4096), jnp.float32)
    for _ in range(3):
        loss, params = train_step(params, x)
        loss.block_until_ready()
    with open(os.path.join(out, "hlo_large_step.txt"), "w") as f:
        f.write(train_step.lower(params, x).compile().as_text())
    print("record_large done loss=%.5f" % float(loss))


def nested(out):
    """The HLO of a jitted function calling another jitted function that
    was called (and traced) on its own first (tests/gpu/programs/gpu_jax.py)."""
    @jax.jit
    def layer(x, w):
        return jnp.tanh(x @ w) * 0.5 + x

    @jax.jit
    def loss(x, w):
        return jnp.mean(layer(layer(x, w), w) ** 2)

    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (256, 256), jnp.float32)
    w = jax.random.normal(key, (256, 256), jnp.float32) * 0.01
    y = layer(x, w).block_until_ready()
    with open(os.path.join(out, "hlo_nested_jit.txt"), "w") as f:
        f.write(loss.lower(y, w).compile().as_text())
    print("nested done")


def reference(out):
    """jax.profiler's per-hlo_op device time for 5 steps of the issue's MLP."""
    key = jax.random.PRNGKey(0)
    params = mlp_init(key, 4096, 8)
    x = jax.random.normal(key, (1024, 4096), jnp.float32)
    for _ in range(3):
        loss, params = train_step(params, x)
    loss.block_until_ready()
    t0 = time.perf_counter()
    for _ in range(10):
        loss, params = train_step(params, x)
    loss.block_until_ready()
    base = (time.perf_counter() - t0) / 10
    logdir = os.path.join(out, "trace")
    with jax.profiler.trace(logdir, create_perfetto_trace=True):
        t0 = time.perf_counter()
        for _ in range(10):
            loss, params = train_step(params, x)
        loss.block_until_ready()
        traced = (time.perf_counter() - t0) / 10
    summary = {"step_s_plain": base, "step_s_jax_profiler": traced, "by_hlo_op": {}, "events": 0,
               "arg_keys": []}
    files = glob.glob(os.path.join(logdir, "**", "*perfetto*"), recursive=True)
    summary["files"] = files
    for path in files:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            data = json.load(f)
        events = data["traceEvents"] if isinstance(data, dict) else data
        for e in events:
            args = e.get("args") or {}
            if "hlo_op" in args and e.get("ph") == "X":
                summary["events"] += 1
                k = args.get("hlo_module", "") + "/" + args["hlo_op"]
                slot = summary["by_hlo_op"].setdefault(k, [0.0, 0])
                slot[0] += float(e.get("dur", 0))
                slot[1] += 1
                if len(summary["arg_keys"]) < 5:
                    summary["arg_keys"].append({"name": e.get("name"), "args": args})
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("reference done steps %.3f ms plain, %.3f ms jax.profiler" % (base * 1e3, traced * 1e3))


if __name__ == "__main__":
    {"record": record, "record_large": record_large, "nested": nested,
     "reference": reference}[sys.argv[1]](sys.argv[2])
