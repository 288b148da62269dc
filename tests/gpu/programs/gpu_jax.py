"""JAX on the GPU: XLA's kernels belong to the Python lines that run the
jitted functions, whether XLA launches them one by one or replays them from
CUDA graphs (its command buffers). loss() is first called from a warm-up
line, which compiles it and records its command buffer; the loop's calls
only replay it."""

import os

# Other GPU tests run beside this one: take memory as needed, not 75 % of
# the device up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

STEPS = 20


@jax.jit
def layer(x, w):
    return jnp.tanh(x @ w) * 0.5 + x  # MARK_MATMUL


@jax.jit
def loss(x, w):
    return jnp.mean(layer(layer(x, w), w) ** 2)


def main():
    if jax.default_backend() != "gpu":
        raise SystemExit("no JAX GPU backend")
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (2048, 2048), dtype=jnp.float32)
    w = jax.random.normal(key, (2048, 2048), dtype=jnp.float32) * 0.01
    for _ in range(STEPS):
        y = layer(x, w).block_until_ready()  # MARK_LAYER
    value = loss(y, w).block_until_ready()  # MARK_WARMUP
    for _ in range(STEPS):
        value = loss(y, w).block_until_ready()  # MARK_LOSS
    print("jax steps=%d loss=%.4f" % (STEPS, float(value)))
    print("jax done")


if __name__ == "__main__":
    main()
