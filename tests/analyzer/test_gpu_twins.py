"""GPU twins: each rule fires on its bad program at the line marked
`# flagged`, stays silent on the fixed twin, and the fixed twin's loop runs
faster (timed without the profiler). Skipped without a CUDA device.

With DEEPCONTEXT_ANALYZER_RESULTS=FILE the measurements are written there
as JSON (docs/ANALYZER.md quotes them)."""

import json
import os
import re
import subprocess

import pytest

from conftest import PROGRAMS, PYTHON, findings, profile_program

RULES = ["pageable_copy", "tensor_cores_unused", "slow_optimizer"]
RESULTS = {}


def cuda_available():
    probe = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.is_available())"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return probe.stdout.strip() == b"True"


pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA device")


def flagged_line(program):
    with open(os.path.join(PROGRAMS, program)) as source:
        for number, text in enumerate(source, 1):
            if "# flagged" in text:
                return number
    raise AssertionError("no '# flagged' line in " + program)


def loop_seconds(program):
    """Best of DEEPCONTEXT_TWIN_REPEATS (2) plain runs (no profiler)."""
    times = []
    for _ in range(int(os.environ.get("DEEPCONTEXT_TWIN_REPEATS", "2"))):
        result = subprocess.run([PYTHON, os.path.join(PROGRAMS, program)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        assert result.returncode == 0, result.stderr.decode()
        times.append(float(re.search(rb"loop_seconds=([0-9.]+)", result.stdout).group(1)))
    return min(times)


@pytest.fixture(scope="module", autouse=True)
def _write_results():
    yield
    path = os.environ.get("DEEPCONTEXT_ANALYZER_RESULTS")
    if path:
        with open(path, "w") as out:
            json.dump(RESULTS, out, indent=2)


@pytest.mark.parametrize("rule", RULES)
def test_gpu_twin(rule, tmp_path):
    bad_program, fixed_program = "gpu_%s_bad.py" % rule, "gpu_%s_fixed.py" % rule
    bad = profile_program(bad_program, tmp_path / "bad.dctx")
    fixed = profile_program(fixed_program, tmp_path / "fixed.dctx")
    fired, silent = findings(bad, rule), findings(fixed, rule)
    bad_seconds, fixed_seconds = loop_seconds(bad_program), loop_seconds(fixed_program)
    RESULTS[rule] = {
        "bad_loop_seconds": bad_seconds, "fixed_loop_seconds": fixed_seconds,
        "measured_saving_seconds": bad_seconds - fixed_seconds,
        "bad_findings": fired, "fixed_findings": silent,
        "all_bad_rules": [f["rule"] for f in findings(bad)],
        "all_fixed_rules": [f["rule"] for f in findings(fixed)],
    }
    assert len(fired) == 1, fired
    assert fired[0]["context"]["file"].endswith("programs/" + bad_program)
    assert fired[0]["context"]["line"] == flagged_line(bad_program), fired[0]["context"]
    assert silent == [], silent
    assert fixed_seconds < bad_seconds, (fixed_seconds, bad_seconds)
