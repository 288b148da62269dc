"""Work launched through Triton hangs from the program's line, not from
Triton's own frames (JITFunction.run in runtime/jit.py, the launcher in
backends/nvidia/driver.py), which are hidden launch glue
(python/deepcontext/_torch_compile.py). A stand-in `triton` package with
that layout, whose "launcher" runs a torch op, checks it without a GPU: a
kernel launch and an op take their Python path the same way."""

import os

from conftest import PYTHON, load_profile, run_profiled
from markers import marker_line

TRITON_JIT = '''from triton.backends.nvidia import driver


class JITFunction:
    def __getitem__(self, grid):
        return lambda *args: self.run(*args, grid=grid)

    def run(self, *args, grid):
        return driver.CudaLauncher()(*args)
'''
TRITON_DRIVER = '''import torch


class CudaLauncher:
    def __call__(self, x):
        return torch.add(x, 1)  # stands for the launch
'''
PROGRAM = '''import torch
import triton

kernel = triton.JITFunction()
x = torch.ones(4)
for _ in range(3):
    kernel[(1,)](x)  # LAUNCH_LINE
'''


def test_triton_launcher_frames_are_hidden_below_the_launch_line(tmp_path):
    package = tmp_path / "site" / "triton"
    for folder in ("runtime", "backends/nvidia"):
        (package / folder).mkdir(parents=True)
    (package / "__init__.py").write_text("from .runtime.jit import JITFunction\n")
    (package / "runtime" / "__init__.py").write_text("")
    (package / "runtime" / "jit.py").write_text(TRITON_JIT)
    (package / "backends" / "__init__.py").write_text("")
    (package / "backends" / "nvidia" / "__init__.py").write_text("")
    (package / "backends" / "nvidia" / "driver.py").write_text(TRITON_DRIVER)
    script = tmp_path / "launch.py"
    script.write_text(PROGRAM)
    out = tmp_path / "run.dctx"
    run_profiled([PYTHON, script], out, env={"PYTHONPATH": str(tmp_path / "site")}, check=0)

    tree = load_profile(out)
    adds = tree.find(kind="operator", name="aten::add")
    assert adds and sum(n.calls() for n in adds) == 3, adds
    for node in adds:
        python = [a for a in node.ancestors() if a.kind == "python"]  # innermost first
        assert python and python[0].file.endswith("launch.py"), node.path()
        assert python[0].line == marker_line(script, "LAUNCH_LINE"), node.path()
        assert not any(os.sep + "triton" + os.sep in a.file for a in python), node.path()
