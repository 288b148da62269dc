"""JAX training steps for the operator-level checks of the JAX support.

    python3 jax_models.py --model mlp|attention [--steps N] [--jax-profiler OUT.json]

mlp: 8 dense layers of 4096, batch 1024, tanh, SGD. attention: 6 blocks
(layer norm, 16-head self-attention, 4x MLP), width 1024, 8 sequences of 512.
Prints `model=M steps=N step_ms=T` (median step after 3 warm-up steps,
synchronized). With --jax-profiler, also times N more steps inside
jax.profiler.trace and writes `step_ms_plain`, `step_ms_jax_profiler` and
jax.profiler's device time per (hlo_module, hlo_op) (sum in us, count) to
OUT.json, from its perfetto trace.
"""

import argparse
import glob
import gzip
import json
import os
import statistics
import tempfile
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def mlp(key):
    keys = jax.random.split(key, 9)
    params = [jax.random.normal(k, (4096, 4096), jnp.float32) * (1.0 / 64) for k in keys[:8]]
    x = jax.random.normal(keys[8], (1024, 4096), jnp.float32)

    def loss(params, x):
        for i, w in enumerate(params):
            with jax.named_scope("layer%d" % i):
                x = jnp.tanh(x @ w)
        return jnp.mean(x ** 2)

    return params, x, loss


def attention(key, blocks=6, width=1024, heads=16, seq=512, batch=8):
    keys = jax.random.split(key, blocks * 4 + 1)
    scale = 1.0 / width ** 0.5
    params = []
    for b in range(blocks):
        k = keys[4 * b:4 * b + 4]
        params.append({
            "qkv": jax.random.normal(k[0], (width, 3 * width), jnp.float32) * scale,
            "out": jax.random.normal(k[1], (width, width), jnp.float32) * scale,
            "up": jax.random.normal(k[2], (width, 4 * width), jnp.float32) * scale,
            "down": jax.random.normal(k[3], (4 * width, width), jnp.float32) * scale / 2,
        })
    x = jax.random.normal(keys[-1], (batch, seq, width), jnp.float32)

    def norm(x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5)

    def loss(params, x):
        for i, p in enumerate(params):
            with jax.named_scope("block%d" % i):
                with jax.named_scope("attention"):
                    q, k, v = jnp.split(norm(x) @ p["qkv"], 3, axis=-1)
                    split = lambda t: t.reshape(batch, seq, heads, width // heads)  # noqa: E731
                    q, k, v = split(q), split(k), split(v)
                    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / (width // heads) ** 0.5
                    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)
                    x = x + a.reshape(batch, seq, width) @ p["out"]
                with jax.named_scope("mlp"):
                    x = x + jax.nn.gelu(norm(x) @ p["up"]) @ p["down"]
        return jnp.mean(x ** 2)

    return params, x, loss


def make_step(loss):
    @jax.jit
    def step(params, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        return value, jax.tree_util.tree_map(lambda w, g: w - 1e-3 * g, params, grads)
    return step


def timed(step, params, x, steps):
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        value, params = step(params, x)  # STEP_LINE
        value.block_until_ready()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, params


def per_op(logdir):
    ops = {}
    for path in glob.glob(os.path.join(logdir, "**", "*perfetto*"), recursive=True):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            data = json.load(f)
        for event in data["traceEvents"] if isinstance(data, dict) else data:
            args = event.get("args") or {}
            if event.get("ph") == "X" and "hlo_op" in args:
                slot = ops.setdefault(args.get("hlo_module", "") + "/" + args["hlo_op"], [0.0, 0])
                slot[0] += float(event.get("dur", 0))
                slot[1] += 1
    return ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=("mlp", "attention"), default="mlp")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--jax-profiler")
    args = parser.parse_args()
    params, x, loss = (mlp if args.model == "mlp" else attention)(jax.random.PRNGKey(0))
    step = make_step(loss)
    for _ in range(3):
        value, params = step(params, x)
    value.block_until_ready()
    step_ms, params = timed(step, params, x, args.steps)
    print("model=%s steps=%d step_ms=%.3f" % (args.model, args.steps, step_ms), flush=True)
    if args.jax_profiler:
        with tempfile.TemporaryDirectory(prefix="dc-jax-trace-") as logdir:
            with jax.profiler.trace(logdir, create_perfetto_trace=True):
                traced_ms, params = timed(step, params, x, args.steps)
            with open(args.jax_profiler, "w") as f:
                json.dump({"step_ms_plain": step_ms, "step_ms_jax_profiler": traced_ms,
                           "steps": args.steps, "per_op": per_op(logdir)}, f, indent=1)
        print("jax_profiler step_ms=%.3f ratio=%.3f" % (traced_ms, traced_ms / step_ms), flush=True)


if __name__ == "__main__":
    main()
