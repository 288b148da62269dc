"""Runs the twin programs under `deepcontext run` and analyzes them."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
BUILD = os.path.abspath(os.environ.get("DEEPCONTEXT_BUILD",
                                       os.path.join(HERE, "..", "..", "build")))
CLI = os.path.join(BUILD, "bin", "deepcontext")
PYTHON = os.environ.get("DEEPCONTEXT_TEST_PYTHON", "/usr/bin/python3")

sys.path.insert(0, os.path.join(BUILD, "python"))


def profile_program(name, output, python=PYTHON, timeout=300, args=()):
    """Profiles programs/<name> (with args) into output and returns its path."""
    result = subprocess.run([CLI, "run", "-o", str(output), "--", python,
                             os.path.join(PROGRAMS, name)] + [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    assert result.returncode == 0, result.stderr.decode()
    return str(output)


def analyze(*args, check=0):
    result = subprocess.run([CLI, "analyze"] + [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if check is not None:
        assert result.returncode == check, (result.returncode, result.stderr.decode())
    return result


def findings(path, rule=None):
    """Findings of `deepcontext analyze --format json` (of one rule)."""
    document = json.loads(analyze("--format", "json", path).stdout)
    return [f for f in document["findings"] if rule is None or f["rule"] == rule]
