"""Builds, caches and loads the PyTorch adapter (runtime/torch/torch_adapter.cc).

The adapter must be compiled against the headers of the torch that is
imported, with the same C++ ABI, and linked against the very libtorch files
mapped into this process. It is built once per (torch version, ABI, library
path, adapter source) and cached in a checked per-user directory
(_adapter_cache); concurrent processes serialize on a lock.
"""

import ctypes
import fcntl
import hashlib
import os
import shlex
import subprocess
import sys

from . import _adapter_cache, _cuda_memory, _paths, _runtime, _torch_compile

_ADAPTER = None
# Set once the CUDA caching allocator hook is attached.
_CUDA_MEMORY_TRACKED = False
_REPORTED_FAILURES = {}  # pid -> the failure block already written there

# Python files of torch itself that sit between the user's line and an op or
# scope; hiding them keeps paths ending at the user's code.
_HIDDEN_TORCH_FILES = ("/torch/autograd/profiler.py", "/torch/_ops.py",
                       "/torch/profiler/", "/torch/autograd/profiler_util.py")


class AdapterError(RuntimeError):
    """The adapter could not be built or loaded; `fix` says how to repair
    it, when that is known."""

    def __init__(self, message, fix=None):
        super().__init__(message)
        self.fix = fix


def _is_debian_torch(torch):
    return os.path.realpath(torch.__file__).startswith("/usr/lib/python3/")


def _header_fix(torch):
    if _is_debian_torch(torch):
        return "apt-get install libtorch-dev"
    return ("install the C++ headers of your torch %s (they ship in the torch wheel: "
            "pip install --force-reinstall torch==%s)"
            % (torch.__version__, torch.__version__.split("+")[0]))


def _build_fix(torch, log):
    """The command that repairs a failed adapter compile, from its log."""
    if "No such file or directory" in log and ("ATen/" in log or "torch/" in log
                                               or "c10/" in log):
        return _header_fix(torch)
    return ("check that your compiler ($CXX, g++) supports C++17 and matches the one "
            "torch %s was built with" % torch.__version__)


def report_failure(torch, error):
    """Says once on stderr, as one block, that the adapter failed, what the
    profile loses and how to fix it, and records it in the profile's
    metadata (warning_torch_adapter), which `report` shows."""
    first_line = (str(error).strip().splitlines() or ["unknown error"])[0]
    fix = getattr(error, "fix", None) or "see the error above"
    block = ("deepcontext: warning: the PyTorch adapter could not be built or loaded "
             "(torch %s)\n"
             "  what failed: %s\n"
             "  what is lost: the operator layer (no aten:: operators, no [forward]/[backward]"
             " phases, no GPU memory by operator); Python lines, CPU time and GPU kernels "
             "are still profiled\n"
             "  fix: %s\n" % (getattr(torch, "__version__", "?"), first_line, fix))
    details = str(error).strip().splitlines()[1:]
    if details:
        block += "  details:\n" + "".join("    %s\n" % line for line in details[-20:])
    if _REPORTED_FAILURES.get(os.getpid()) != block:  # once per process and cause
        _REPORTED_FAILURES[os.getpid()] = block
        try:
            sys.stderr.write(block)
            sys.stderr.flush()
        except Exception:
            pass
    _runtime.set_metadata("warning_torch_adapter",
                          "PyTorch operators not profiled: %s; fix: %s" % (first_line, fix))


def _mapped_library(prefix):
    """Path of the loaded shared object whose file name starts with prefix."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6:
                path = parts[5].strip()
                if os.path.basename(path).startswith(prefix):
                    return path
    return None


def _include_dirs(torch):
    root = os.path.join(os.path.dirname(torch.__file__), "include")
    dirs = [root, os.path.join(root, "torch", "csrc", "api", "include")]
    if not os.path.isfile(os.path.join(root, "ATen", "record_function.h")):
        # Distribution packages may keep the headers in the system prefix.
        dirs.append("/usr/include")
    return dirs


def _torch_version(torch):
    parts = []
    for part in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _cuda_memory_support(torch):
    """(libc10_cuda.so, folder of cuda_runtime.h, None) when the adapter can
    hook the CUDA caching allocator (torch >= 2.1 built with CUDA:
    attachAllocatorTraceTracker), else (None, None, why not)."""
    if getattr(torch.version, "cuda", None) is None:
        return None, None, "torch %s has no CUDA" % torch.__version__
    if _torch_version(torch) < (2, 1):
        return None, None, "torch %s is older than 2.1" % torch.__version__
    library = _mapped_library("libc10_cuda.so")
    if library is None:
        return None, None, "libc10_cuda.so is not loaded in this process"
    include = _cuda_include_dir()
    if include is None:
        return None, None, "cuda_runtime.h not found (set CUDA_HOME to the CUDA toolkit)"
    return library, include, None


def _cuda_include_dir():
    """A directory with cuda_runtime.h (torch's CUDA headers include it): the
    toolkit's, or the one pip's nvidia runtime package ships; None if absent."""
    candidates = []
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            candidates.append(os.path.join(os.environ[variable], "include"))
    candidates.append("/usr/local/cuda/include")
    for entry in _paths.library_search_path():
        nvidia = os.path.join(entry, "nvidia")
        if os.path.isdir(nvidia):
            for name in sorted(os.listdir(nvidia)):
                candidates.append(os.path.join(nvidia, name, "include"))
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "cuda_runtime.h")):
            return directory
    return None


_COMPILE_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-w", "-fvisibility=hidden")


def _compile_flags():
    """_COMPILE_FLAGS plus the code-packing flags the runtime was built with.
    The adapter runs at every op's entry and exit, between the framework's
    own code, which evicts it from the instruction cache: packed without
    alignment padding, as the runtime is, it spans fewer lines. CMake stages
    the flags it used (none where its compiler lacks them) as
    share/deepcontext/code_packing_flags (runtime/CMakeLists.txt)."""
    path = os.path.join(_paths.share(), "code_packing_flags")
    try:
        with open(path, encoding="utf-8") as f:
            packing = f.read().split()
    except OSError as error:
        raise AdapterError("cannot read %s: %s" % (path, error.strerror),
                           fix="reinstall DeepContext (cmake --install) or rebuild it") from None
    return _COMPILE_FLAGS + tuple(packing)


def _build(torch, source, output, include_dirs, libraries, defines, flags):
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    compiler = shlex.split(os.environ.get("CXX", "g++"))
    command = compiler + list(flags) + [
        "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi,
        "-I", os.path.join(_paths.share(), "include"),
    ] + ["-D%s" % define for define in defines]
    for directory in include_dirs:
        command += ["-isystem", directory]
    command += [source, "-o", output]
    command += libraries
    for directory in sorted({os.path.dirname(lib) for lib in libraries}):
        command.append("-Wl,-rpath," + directory)
    # The compiler must not inherit our bootstrap (it may run Python helpers).
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPCONTEXT_")}
    env.pop("PYTHONPATH", None)
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, check=False)
    except OSError as error:
        raise AdapterError("no C++ compiler to build the PyTorch adapter (%s: %s)"
                           % (compiler[0], error.strerror),
                           fix="apt-get install g++ (or set CXX to your C++ compiler)") from None
    if result.returncode != 0:
        log = result.stdout.decode("utf-8", "replace")
        errors = [line for line in log.splitlines() if "error" in line]
        raise AdapterError("compiling the PyTorch adapter failed: %s\n$ %s\n%s"
                           % ((errors or ["see the compiler output"])[0].strip(),
                              " ".join(shlex.quote(c) for c in command), log[-4000:]),
                           fix=_build_fix(torch, log))


def adapter_path(torch, cuda=None):
    """Returns the cached adapter for this torch, building it if needed.
    `cuda` is _cuda_memory_support(torch), computed here when not given."""
    source = os.path.join(_paths.share(), "torch_adapter.cc")
    if not os.path.isfile(source):
        raise AdapterError("adapter source not found at %s" % source,
                           fix="reinstall DeepContext (cmake --install) or rebuild it")
    libraries = [_mapped_library("libtorch_cpu.so"), _mapped_library("libc10.so")]
    if not all(libraries):
        raise AdapterError("libtorch_cpu.so / libc10.so are not loaded in this process",
                           fix="this torch build is unsupported (its libraries are not "
                               "libtorch_cpu.so and libc10.so)")
    defines = []
    include_dirs = _include_dirs(torch)
    cuda_library, cuda_include, _ = cuda or _cuda_memory_support(torch)
    if cuda_library:
        libraries.append(cuda_library)
        include_dirs.append(cuda_include)
        defines.append("DEEPCONTEXT_TORCH_CUDA=1")
    header = os.path.join(_paths.share(), "include", "deepcontext", "dlmonitor.h")
    return cached_build(torch, source, "torch-adapter", include_dirs, libraries, defines,
                        inputs=(header,),
                        announce="deepcontext: building the PyTorch adapter for torch %s "
                                 "(once per torch installation)...\n" % torch.__version__)


def cached_build(torch, source, folder, include_dirs, libraries, defines=(), inputs=(),
                 announce=None):
    """Path of `source` compiled against this torch into this user's checked
    cache folder `folder` (see _adapter_cache), building it first if needed
    or if the cached file does not match its recorded SHA-256. The cache key
    covers the torch version and ABI, `source` and the other `inputs` files,
    the libraries, the defines, the compiler flags and $CXX; concurrent
    processes serialize on a lock. `announce` is written to stderr before a
    build. Load the result with _adapter_cache.load()."""
    digest = hashlib.sha256()
    for path in (source,) + tuple(inputs):
        with open(path, "rb") as f:
            digest.update(f.read())
    flags = _compile_flags()
    digest.update(repr((list(libraries), list(defines), flags)).encode())
    digest.update(os.environ.get("CXX", "g++").encode())
    name = "torch-%s-abi%d-%s.so" % (torch.__version__.replace("+", "_").replace("/", "_"),
                                     int(torch._C._GLIBCXX_USE_CXX11_ABI),
                                     digest.hexdigest()[:16])
    try:
        dir_fd, directory = _adapter_cache.open_folder(folder)
    except _adapter_cache.CacheError as error:
        raise AdapterError(str(error), fix="see the message") from None
    try:
        if _is_verified(dir_fd, name):
            return os.path.join(directory, name)
        lock = _adapter_cache.open_lock(dir_fd, "build.lock")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _is_verified(dir_fd, name):
                return os.path.join(directory, name)
            _adapter_cache.remove_stale_temporaries(dir_fd)
            if announce:
                sys.stderr.write(announce)
                sys.stderr.flush()
            temporary = "%s.%d.tmp" % (name, os.getpid())
            try:
                _build(torch, source, os.path.join(directory, temporary), include_dirs,
                       libraries, defines, flags)
                os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            finally:
                try:
                    os.unlink(temporary, dir_fd=dir_fd)
                except FileNotFoundError:
                    pass
            _adapter_cache.record_hash(dir_fd, name)
        finally:
            os.close(lock)
    finally:
        os.close(dir_fd)
    return os.path.join(directory, name)


def _is_verified(dir_fd, name):
    fd = _adapter_cache.open_verified(dir_fd, name)
    if fd is None:
        return False
    os.close(fd)
    return True


def install(torch):
    """Loads the adapter into this process and registers its callback."""
    global _ADAPTER
    if _ADAPTER is not None:
        return _ADAPTER
    cuda = _cuda_memory_support(torch)
    path = adapter_path(torch, cuda)
    try:
        adapter = _adapter_cache.load(path)
    except _adapter_cache.CacheError as error:
        raise AdapterError(str(error)) from None
    except OSError as error:  # the dynamic loader refused it: ABI mismatch
        raise AdapterError("loading the PyTorch adapter failed: %s" % error,
                           fix="remove %s so that it is rebuilt against this torch"
                               % path) from None
    adapter.deepcontext_torch_install.restype = ctypes.c_int
    adapter.deepcontext_torch_install.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                  ctypes.c_size_t]
    adapter.deepcontext_torch_enable.restype = ctypes.c_int
    adapter.deepcontext_torch_enable.argtypes = [ctypes.c_int]
    adapter.deepcontext_torch_window.restype = ctypes.c_int
    adapter.deepcontext_torch_window.argtypes = [ctypes.c_int]
    adapter.deepcontext_torch_track_cuda_memory.restype = ctypes.c_int
    adapter.deepcontext_torch_track_cuda_memory.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    error = ctypes.create_string_buffer(1024)
    if adapter.deepcontext_torch_install(_runtime.emit_function_address(), error,
                                         len(error)) != 0:
        raise AdapterError("registering the PyTorch callback failed: %s"
                           % error.value.decode("utf-8", "replace"),
                           fix="this torch %s may be unsupported; report it with the "
                               "line above" % torch.__version__)
    for pattern in _HIDDEN_TORCH_FILES:
        _runtime.hide_leaf_files(pattern)
    _torch_compile.install()
    _runtime.set_metadata("torch_version", torch.__version__)
    _runtime.set_metadata("torch_cxx11_abi", int(torch._C._GLIBCXX_USE_CXX11_ABI))
    _ADAPTER = adapter
    _runtime.set_op_switch(ctypes.cast(adapter.deepcontext_torch_window,
                                       ctypes.c_void_p).value)
    _track_cuda_memory(torch, adapter, cuda[2])
    return adapter


def _track_cuda_memory(torch, adapter, unsupported):
    """Hooks the CUDA caching allocator once CUDA is initialized (its
    per-device allocators only exist from then on; torch runs lazy calls
    right after initialization, or at once when it already happened).
    `unsupported` says why the adapter was built without the hook, if so."""
    if os.environ.get("DEEPCONTEXT_GPU_MEMORY") == "0":
        _runtime.set_metadata("gpu_memory", "not tracked: turned off (--no-gpu-memory, "
                              "DEEPCONTEXT_GPU_MEMORY=0)")
        return
    if unsupported is not None:
        _runtime.set_metadata("gpu_memory", "not tracked: " + unsupported)
        return

    def attach():
        error = ctypes.create_string_buffer(1024)
        if adapter.deepcontext_torch_track_cuda_memory(error, len(error)) == 0:
            global _CUDA_MEMORY_TRACKED
            _CUDA_MEMORY_TRACKED = True
            _runtime.set_metadata("gpu_memory", "tracked: CUDA caching allocator")
            if _runtime.is_active():
                _cuda_memory.report(torch)
        else:
            message = error.value.decode("utf-8", "replace").strip().splitlines()
            _runtime.set_metadata("gpu_memory", "not tracked: %s"
                                  % (message[0] if message else "unknown error"))

    lazy_call = getattr(torch.cuda, "_lazy_call", None)
    if torch.cuda.is_initialized():
        attach()
        return
    if lazy_call is None:
        _runtime.set_metadata("gpu_memory", "not tracked: this torch has no CUDA "
                              "initialization hook (torch.cuda._lazy_call)")
        return
    _runtime.set_metadata("gpu_memory", "not tracked: CUDA was never initialized")
    lazy_call(attach)


def enable(on):
    """Pauses (False) or resumes (True) op interception, if installed.
    Resuming also reports the CUDA memory in use now, so that a profiled
    region's device peak counts what was allocated before it."""
    if _ADAPTER is not None:
        _ADAPTER.deepcontext_torch_enable(1 if on else 0)
        if on and _CUDA_MEMORY_TRACKED:
            _cuda_memory.report(sys.modules["torch"])
