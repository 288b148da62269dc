"""The adapter cache loads only what this user built, and a failed adapter
is said once, clearly, with its fix; libraries are never searched in the
current directory."""

import json
import os
import re
import stat
import subprocess

import pytest

from conftest import BUILD, PYTHON, load_profile, package_env, run_profiled

_SOURCE = "extern \"C\" __attribute__((visibility(\"default\"))) int answer() { return 42; }\n"
_PLANTED = ("#include <stdio.h>\n"
            "__attribute__((constructor)) static void planted() {\n"
            "  FILE* f = fopen(\"%s\", \"w\"); if (f) fclose(f);\n"
            "}\n"
            "extern \"C\" int answer() { return 666; }\n")

# Builds a tiny library through cached_build (the path the adapter takes)
# with a stand-in torch, loads it and prints answer(). Arguments after the
# source are added to the adapter's compiler flags.
_BUILD_AND_LOAD = """
import sys, types
from deepcontext import _adapter_cache, _torch_adapter
torch = types.SimpleNamespace(__version__="9.9", _C=types.SimpleNamespace(
    _GLIBCXX_USE_CXX11_ABI=1))
_torch_adapter._COMPILE_FLAGS += tuple(sys.argv[2:])
try:
    path = _torch_adapter.cached_build(torch, sys.argv[1], "test-folder", [], [])
    library = _adapter_cache.load(path)
except Exception as error:
    print("error:", error)
    sys.exit(3)
print(path)
print("answer", library.answer())
"""


def _build_and_load(tmp_path, cache, extra_flags=(), home=None):
    """Builds and loads the tiny library; `extra_flags` are added to the
    adapter's compiler flags in that process, `home` replaces the build as
    DEEPCONTEXT_HOME."""
    source = tmp_path / "lib.cc"
    source.write_text(_SOURCE)
    env = package_env()
    env["DEEPCONTEXT_CACHE_DIR"] = str(cache)
    if home is not None:
        env["DEEPCONTEXT_HOME"] = str(home)
    return subprocess.run([PYTHON, "-c", _BUILD_AND_LOAD, str(source), *extra_flags],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


def _compile(source_text, output, tmp_path):
    source = tmp_path / "planted.cc"
    source.write_text(source_text)
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(output), str(source)], check=True)


def test_cache_is_private_per_user_and_hashed(tmp_path):
    cache = tmp_path / "shared"
    result = _build_and_load(tmp_path, cache)
    assert result.returncode == 0, result.stderr.decode() + result.stdout.decode()
    path = result.stdout.decode().splitlines()[0]
    user_dir = cache / ("uid-%d" % os.getuid())
    assert path.startswith(str(user_dir) + "/")
    assert stat.S_IMODE(user_dir.stat().st_mode) == 0o700
    assert os.path.exists(path + ".sha256")


def test_other_compiler_flags_build_another_library(tmp_path):
    # A library built with other flags (an older release's) is not reused.
    cache = tmp_path / "shared"
    first = _build_and_load(tmp_path, cache)
    again = _build_and_load(tmp_path, cache)
    other = _build_and_load(tmp_path, cache, extra_flags=("-O1",))
    for result in (first, again, other):
        assert result.returncode == 0, result.stderr.decode() + result.stdout.decode()
        assert b"answer 42" in result.stdout
    path = first.stdout.decode().splitlines()[0]
    assert again.stdout.decode().splitlines()[0] == path
    other_path = other.stdout.decode().splitlines()[0]
    assert other_path != path
    assert os.path.exists(path) and os.path.exists(other_path)


def _home_with_packing_flags(tmp_path, text):
    """A DEEPCONTEXT_HOME that is the build's but for share/deepcontext's
    code_packing_flags: `text`, or no such file when None."""
    home = tmp_path / "home"
    share = home / "share" / "deepcontext"
    share.mkdir(parents=True)
    (home / "lib").symlink_to(os.path.join(BUILD, "lib"))
    for entry in os.listdir(os.path.join(BUILD, "share", "deepcontext")):
        if entry != "code_packing_flags":
            (share / entry).symlink_to(os.path.join(BUILD, "share", "deepcontext", entry))
    if text is not None:
        (share / "code_packing_flags").write_text(text)
    return home


def test_staged_packing_flags_are_the_runtimes():
    # The adapter is packed as the runtime is: CMake stages the flags it
    # compiled the runtime's sources with, and none where its compiler
    # lacks them.
    with open(os.path.join(BUILD, "share", "deepcontext", "code_packing_flags")) as f:
        staged = f.read().split()
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        accepted = re.search(r"^DEEPCONTEXT_HAVE_ALIGN_FLAGS:\w+=(\w*)$", f.read(), re.M)
    assert accepted, "CMakeCache.txt does not say whether the compiler took the flags"
    with open(os.path.join(BUILD, "compile_commands.json")) as f:
        commands = json.load(f)
    # The objects of the injected library: runtime/CMakeFiles/deepcontext.dir
    # and runtime/*/CMakeFiles/dc_*.dir, not the tests of the same sources.
    library_object = re.compile(r" -o runtime/(\w+/)?CMakeFiles/(deepcontext|dc_\w+)\.dir/")
    runtime = [entry["command"].split() for entry in commands
               if library_object.search(entry["command"])]
    assert len(runtime) > 20
    if accepted.group(1) in ("1", "ON", "TRUE"):
        assert staged
        for command in runtime:
            assert [flag for flag in staged if flag not in command] == [], command
    else:
        assert staged == []
        for command in runtime:
            assert "-falign-functions=1" not in command, command


def test_packing_flags_come_from_the_staged_file(tmp_path):
    # Other staged flags (another release's) build another library, and the
    # flags reach the compiler: one it rejects fails the build.
    cache = tmp_path / "shared"
    with open(os.path.join(BUILD, "share", "deepcontext", "code_packing_flags")) as f:
        staged = f.read()
    same = _build_and_load(tmp_path, cache, home=_home_with_packing_flags(tmp_path / "a", staged))
    plain = _build_and_load(tmp_path, cache)
    other = _build_and_load(tmp_path, cache, home=_home_with_packing_flags(tmp_path / "b", "-O1\n"))
    for result in (same, plain, other):
        assert result.returncode == 0, result.stderr.decode() + result.stdout.decode()
        assert b"answer 42" in result.stdout
    path = same.stdout.decode().splitlines()[0]
    assert plain.stdout.decode().splitlines()[0] == path
    assert other.stdout.decode().splitlines()[0] != path
    rejected = _build_and_load(tmp_path, cache,
                               home=_home_with_packing_flags(tmp_path / "c", "--no-such-flag\n"))
    assert rejected.returncode == 3
    assert b"compiling the PyTorch adapter failed" in rejected.stdout
    assert b"--no-such-flag" in rejected.stdout


def test_missing_packing_flags_file_is_a_clear_error(tmp_path):
    result = _build_and_load(tmp_path, tmp_path / "shared",
                             home=_home_with_packing_flags(tmp_path, None))
    assert result.returncode == 3
    out = result.stdout.decode()
    assert "cannot read" in out and "code_packing_flags" in out, out


def test_planted_library_is_not_loaded(tmp_path):
    cache = tmp_path / "shared"
    path = _build_and_load(tmp_path, cache).stdout.decode().splitlines()[0]
    marker = tmp_path / "planted-ran"
    _compile(_PLANTED % marker, path, tmp_path)  # replaced behind our back
    result = _build_and_load(tmp_path, cache)
    assert result.returncode == 0, result.stderr.decode()
    assert b"answer 42" in result.stdout
    assert not marker.exists()


def test_symlinked_lock_file_does_not_truncate_its_target(tmp_path):
    cache = tmp_path / "shared"
    folder = cache / ("uid-%d" % os.getuid()) / "test-folder"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent, 0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, folder / "build.lock")
    result = _build_and_load(tmp_path, cache)
    assert victim.read_text() == "precious"
    assert result.returncode == 3
    assert b"lock file" in result.stdout


def test_group_writable_cache_is_repaired_and_its_files_discarded(tmp_path):
    cache = tmp_path / "shared"
    folder = cache / ("uid-%d" % os.getuid()) / "test-folder"
    path = _build_and_load(tmp_path, cache).stdout.decode().splitlines()[0]
    os.chmod(folder, 0o770)
    result = _build_and_load(tmp_path, cache)
    assert result.returncode == 0, result.stdout.decode()
    assert b"was accessible to other users (mode 770)" in result.stderr
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert os.path.exists(path)  # rebuilt


def test_cache_of_another_user_is_refused(tmp_path):
    if os.getuid() != 0:
        pytest.skip("only root can make a directory owned by someone else")
    cache = tmp_path / "shared"
    user_dir = cache / "uid-0"
    user_dir.mkdir(parents=True, mode=0o700)
    os.chown(user_dir, 65534, 65534)
    result = _build_and_load(tmp_path, cache)
    assert result.returncode == 3
    assert b"belongs to uid 65534, not to you" in result.stdout


def test_cupti_is_never_loaded_from_the_current_directory(tmp_path):
    marker = tmp_path / "cupti-ran"
    lib = tmp_path / "nvidia" / "evil" / "lib"
    lib.mkdir(parents=True)
    _compile(_PLANTED % marker, lib / "libcupti.so.12", tmp_path)
    code = ("import deepcontext\n"
            "with deepcontext.profile('out.dctx'):\n"
            "    pass\n")
    result = subprocess.run([PYTHON, "-c", code], cwd=tmp_path, env=package_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    assert not marker.exists()


def test_failed_adapter_is_one_clear_block_and_a_profile_warning(tmp_path):
    out = tmp_path / "noadapter.dctx"
    result = run_profiled([PYTHON, "-c", "import torch; torch.ones(2).sum()"], out,
                          env={"CXX": "/nonexistent/g++",
                               "DEEPCONTEXT_CACHE_DIR": str(tmp_path / "cache")}, check=0)
    stderr = result.stderr.decode()
    assert "the PyTorch adapter could not be built or loaded" in stderr
    assert "what is lost: the operator layer" in stderr
    assert "fix: apt-get install g++" in stderr
    warning = load_profile(out).metadata["warning_torch_adapter"]
    assert "no C++ compiler" in warning and "apt-get install g++" in warning


def test_missing_torch_headers_name_the_package_to_install(tmp_path):
    # A compiler that fails as g++ does without libtorch-dev.
    compiler = tmp_path / "cxx"
    compiler.write_text("#!/bin/sh\necho 'torch_adapter.cc:3:10: fatal error: "
                        "ATen/record_function.h: No such file or directory'\nexit 1\n")
    compiler.chmod(0o755)
    out = tmp_path / "noheaders.dctx"
    result = run_profiled([PYTHON, "-c", "import torch; torch.ones(2).sum()"], out,
                          env={"CXX": str(compiler),
                               "DEEPCONTEXT_CACHE_DIR": str(tmp_path / "cache")}, check=0)
    stderr = result.stderr.decode()
    assert stderr.count("could not be built or loaded") == 1, stderr
    assert "what failed: compiling the PyTorch adapter failed: " in stderr
    assert "ATen/record_function.h: No such file or directory" in stderr
    import_torch = subprocess.run([PYTHON, "-c", "import torch; print(torch.__file__)"],
                                  stdout=subprocess.PIPE, check=True).stdout.decode()
    if import_torch.startswith("/usr/lib/python3/"):
        assert "fix: apt-get install libtorch-dev" in stderr, stderr
    else:
        assert "fix: install the C++ headers of your torch" in stderr, stderr
    assert "warning_torch_adapter" in load_profile(out).metadata


def test_temporaries_of_killed_builds_are_removed(tmp_path):
    cache = tmp_path / "shared"
    folder = cache / ("uid-%d" % os.getuid()) / "test-folder"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent, 0o700)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = folder / ("torch-9.9-abi1-0123456789abcdef.so.%d.tmp" % dead.pid)
    stale.write_bytes(b"half a library")
    live = folder / ("other.so.%d.tmp" % os.getpid())
    live.write_bytes(b"being built")
    result = _build_and_load(tmp_path, cache)
    assert result.returncode == 0, result.stdout.decode()
    assert not stale.exists() and live.exists()
