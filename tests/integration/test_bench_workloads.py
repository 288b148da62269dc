"""The benchmark workloads run (on the CPU here; bench/ runs them on GPUs)."""

import os
import subprocess

from conftest import PYTHON, package_env

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")


def test_gpu_workload_alternates_plain_steps_and_profiled_regions():
    result = subprocess.run(
        [PYTHON, os.path.join(BENCH, "workloads", "gpu_models.py"), "--model", "mlp",
         "--device", "cpu", "--ab-rounds", "2", "--steps", "3", "--warmup", "1",
         "--ab-variants", "sampled,gpu-off"],
        env=package_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    values = dict(token.split("=", 1) for token in result.stdout.decode().split())
    assert values["rounds"] == "2"
    for key in ("ab_first_plain_ms", "ab_plain_ms", "ab_sampled_ms", "ab_gpu-off_ms"):
        assert float(values[key]) > 0, values


def test_gpu_workload_refuses_an_unknown_variant():
    result = subprocess.run(
        [PYTHON, os.path.join(BENCH, "workloads", "gpu_models.py"), "--model", "mlp",
         "--device", "cpu", "--ab-rounds", "1", "--steps", "1", "--warmup", "1",
         "--ab-variants", "sampled,fast"],
        env=package_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert result.returncode != 0
    assert b"unknown --ab-variants fast" in result.stderr, result.stderr
