"""Shared fixtures: where the build is, and running programs under the profiler."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
BUILD = os.path.abspath(os.environ.get("DEEPCONTEXT_BUILD",
                                       os.path.join(HERE, "..", "..", "build")))
CLI = os.path.join(BUILD, "bin", "deepcontext")
PYTHON = os.environ.get("DEEPCONTEXT_TEST_PYTHON", "/usr/bin/python3")
# An NVIDIA driver is loaded: CUPTI can trace here, so a profile's GPU status
# says what it traced rather than why it could not.
NVIDIA_DRIVER = os.path.exists("/dev/nvidiactl")

sys.path.insert(0, HERE)


def program(name):
    return os.path.join(PROGRAMS, name)


def run_profiled(args, output, *, options=(), input=None, env=None, timeout=300, check=None):
    """Runs `deepcontext run [options] -o output -- args`; returns CompletedProcess."""
    environment = dict(os.environ)
    environment.update(env or {})
    result = subprocess.run([CLI, "run"] + list(options) + ["-o", str(output), "--"] + list(args),
                            input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=environment, timeout=timeout)
    if check is not None:
        assert result.returncode == check, (result.returncode, result.stderr.decode())
    return result


def package_env():
    """Environment for `import deepcontext` from the build, without `deepcontext run`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(BUILD, "python")
    return env


def run_with_package(args, *, timeout=300):
    """Runs `args` in package_env() (no `deepcontext run`); returns CompletedProcess."""
    return subprocess.run([str(a) for a in args], env=package_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def run_plain(args, *, input=None, timeout=300):
    return subprocess.run(list(args), input=input, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def cli(*args, check=0):
    result = subprocess.run([CLI] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, timeout=120)
    if check is not None:
        assert result.returncode == check, (result.returncode, result.stderr.decode())
    return result


def load_profile(*paths):
    """The profile(s) as the `export --format json` tree (see profile_tree.py)."""
    from profile_tree import Tree
    result = cli("export", "--format", "json", *paths)
    return Tree(json.loads(result.stdout))


@pytest.fixture(scope="session", autouse=True)
def _built():
    if not os.access(CLI, os.X_OK):
        pytest.exit("deepcontext is not built at %s" % CLI, returncode=2)
