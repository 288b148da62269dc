"""Builds the compiled parts of DeepContext with CMake for `pip install .`.

The runtime library, the `deepcontext` command and the files the runtime
needs at run time are installed by `cmake --install` into the package, as
deepcontext/_home/{bin,lib,share}; deepcontext._paths and the command find
each other there. The `deepcontext` on PATH is the package's entry point,
which executes deepcontext/_home/bin/deepcontext.

Environment:
  DEEPCONTEXT_CMAKE_ARGS  extra arguments for the CMake configure step
  DEEPCONTEXT_PREBUILT    an existing build directory to install from
                          instead of building (it must hold a configured
                          and built tree of this source)
  CMAKE_BUILD_PARALLEL_LEVEL  parallel compile jobs (CMake's own variable)
"""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

# Only what `cmake --install` installs needs building; tests and benchmarks
# are left out.
TARGETS = ["deepcontext", "deepcontext_cli", "deepcontext_torch_adapter_source"]


def _run(command, cwd=None):
    print("+ " + " ".join(shlex.quote(str(part)) for part in command), flush=True)
    subprocess.run([str(part) for part in command], cwd=cwd, check=True)


class BuildWithCMake(build_py):
    """build_py that also builds and installs the native parts."""

    def run(self):
        super().run()
        source = os.path.dirname(os.path.abspath(__file__))
        build = os.environ.get("DEEPCONTEXT_PREBUILT") or self._configure_and_build(source)
        home = os.path.join(os.path.abspath(self.build_lib), "deepcontext", "_home")
        shutil.rmtree(home, ignore_errors=True)
        _run(["cmake", "--install", build, "--prefix", home])
        # The package itself is installed by setuptools; the command finds it
        # from _home (tools/cli/install_layout.cc).
        shutil.rmtree(os.path.join(home, "python"), ignore_errors=True)

    def _configure_and_build(self, source):
        build = os.path.join(source, "build", "pip")
        args = ["cmake", "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                "-DDEEPCONTEXT_BUILD_TESTS=OFF", "-DDEEPCONTEXT_PYTHON=" + sys.executable]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        if shutil.which("ccache"):
            args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        args += shlex.split(os.environ.get("DEEPCONTEXT_CMAKE_ARGS", ""))
        _run(args)
        _run(["cmake", "--build", build, "--target"] + TARGETS)
        return build


class BinaryDistribution(Distribution):
    """The package holds a native library and executable: not pure Python."""

    def has_ext_modules(self):
        return True


# setuptools' own build folder would default to build/, the CMake build tree.
setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution,
      options={"build": {"build_base": "build/setuptools"},
               "egg_info": {"egg_base": "build"}})
