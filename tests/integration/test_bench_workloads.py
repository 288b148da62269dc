"""The benchmark workloads run (on the CPU here; bench/ runs them on GPUs)."""

import os

from conftest import PYTHON, run_with_package

WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                        "workloads", "gpu_models.py")


def run_mlp_on_cpu(*options):
    return run_with_package([PYTHON, WORKLOAD, "--model", "mlp", "--device", "cpu",
                             "--warmup", "1"] + list(options))


def test_gpu_workload_alternates_plain_steps_and_profiled_regions():
    result = run_mlp_on_cpu("--ab-rounds", "2", "--steps", "3", "--ab-variants", "sampled,gpu-off")
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert values["rounds"] == "2"
    for key in ("ab_first_plain_ms", "ab_plain_ms", "ab_sampled_ms", "ab_gpu-off_ms"):
        assert float(values[key]) > 0, values


def test_gpu_workload_refuses_an_unknown_variant():
    result = run_mlp_on_cpu("--ab-rounds", "1", "--steps", "1", "--ab-variants", "sampled,fast")
    assert result.returncode != 0
    assert b"unknown --ab-variants fast" in result.stderr, result.stderr
