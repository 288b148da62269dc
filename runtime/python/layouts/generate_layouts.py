#!/usr/bin/env python3
"""Generates cpython_3_<minor>.h: struct offsets for the GIL-free frame reader.

The frame reader (runtime/python/) must not include any version's Python.h,
because one build of the runtime serves every CPython version. Instead it reads
the interpreter's structs through byte offsets. This script measures those
offsets the only reliable way: it compiles a small C program against each
installed interpreter's own headers (including the internal ones, with
Py_BUILD_CORE) and prints offsetof()/sizeof() values and the bit masks of the
unicode `state` bitfield.

Usage (from the repository root):

    python3 runtime/python/layouts/generate_layouts.py            # write headers
    python3 runtime/python/layouts/generate_layouts.py --check    # verify only

Interpreters are found under $PYENV_ROOT/versions (default ~/.pyenv) as
3.<minor>.* for every supported minor; free-threaded builds are skipped (the
reader does not support them). Any other installation of the same minor that is
found (e.g. the distribution's /usr/bin/python3.11) is compiled too and must
produce identical offsets, otherwise the script fails: a layout is only
committed when every build we can see agrees on it.

Architectures: each header holds one block per architecture, guarded by the
compiler's architecture macro. Running the script on another architecture
(e.g. aarch64) adds or replaces only that architecture's block and keeps the
others, so supporting a new architecture is a regeneration there plus a commit.

Cross measurement: with --arch aarch64 on an x86-64 host the program is
compiled by Debian's aarch64-linux-gnu-gcc (static) and run under
qemu-aarch64-static, so every offset comes from the aarch64 ABI. The headers
are those of the host's pyenv builds, whose pyconfig.h was configured on the
host; the program asserts that every SIZEOF_*/ALIGNOF_* value of that
pyconfig.h matches the target compiler, which is what struct layout depends
on. --sysroot adds the interpreters of a target root filesystem (e.g.
Debian 12 arm64's python3.11, with its own aarch64 pyconfig.h), which must
agree like any other installation:

    python3 runtime/python/layouts/generate_layouts.py --arch aarch64 \
        --sysroot /var/cache/deepcontext-arm64-root/rootfs
"""

import argparse
import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

SUPPORTED_MINORS = (9, 10, 11, 12, 13)

# platform.machine() -> predefined compiler macro guarding the block.
ARCH_MACROS = {
    "x86_64": "__x86_64__",
    "aarch64": "__aarch64__",
}

# C program printing "key value" lines. {defines} and {includes} are filled in
# per minor version; the family-specific body is appended.
C_PROLOGUE = r"""
#define PY_SSIZE_T_CLEAN
{defines}
#include <Python.h>
{includes}
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <wchar.h>

#define OFF(key, type, field) \
  printf("%s %ld\n", key, (long)offsetof(type, field))
#define VAL(key, value) printf("%s %ld\n", key, (long)(value))
/* Bit mask of one field of PyASCIIObject.state, as seen in the 32-bit word
   that holds the bitfield. */
#define STATE_MASK(key, field)                                  \
  do {                                                          \
    PyASCIIObject o;                                            \
    unsigned int word;                                          \
    memset(&o, 0, sizeof o);                                    \
    o.state.field = ~0u;                                        \
    memcpy(&word, &o.state, sizeof word);                       \
    printf("%s %lu\n", key, (unsigned long)word);               \
  } while (0)

/* pyconfig.h states the type sizes it was configured for; a header set
   configured elsewhere (cross measurement) is only valid if they hold for
   the compiler measuring here. */
#define SIZE_HOLDS(macro, type) \
  _Static_assert(macro == sizeof(type), #macro " disagrees with the compiler")
#ifdef SIZEOF_VOID_P
SIZE_HOLDS(SIZEOF_VOID_P, void*);
#endif
#ifdef SIZEOF_SIZE_T
SIZE_HOLDS(SIZEOF_SIZE_T, size_t);
#endif
#ifdef SIZEOF_LONG
SIZE_HOLDS(SIZEOF_LONG, long);
#endif
#ifdef SIZEOF_INT
SIZE_HOLDS(SIZEOF_INT, int);
#endif
#ifdef SIZEOF_SHORT
SIZE_HOLDS(SIZEOF_SHORT, short);
#endif
#ifdef SIZEOF_LONG_LONG
SIZE_HOLDS(SIZEOF_LONG_LONG, long long);
#endif
#ifdef SIZEOF_DOUBLE
SIZE_HOLDS(SIZEOF_DOUBLE, double);
#endif
#ifdef SIZEOF_FLOAT
SIZE_HOLDS(SIZEOF_FLOAT, float);
#endif
#ifdef SIZEOF_WCHAR_T
SIZE_HOLDS(SIZEOF_WCHAR_T, wchar_t);
#endif
#ifdef SIZEOF_TIME_T
SIZE_HOLDS(SIZEOF_TIME_T, time_t);
#endif
#ifdef SIZEOF_PID_T
SIZE_HOLDS(SIZEOF_PID_T, pid_t);
#endif
#ifdef SIZEOF_OFF_T
SIZE_HOLDS(SIZEOF_OFF_T, off_t);
#endif
#ifdef SIZEOF_UINTPTR_T
SIZE_HOLDS(SIZEOF_UINTPTR_T, uintptr_t);
#endif
#ifdef ALIGNOF_LONG
_Static_assert(ALIGNOF_LONG == _Alignof(long), "ALIGNOF_LONG");
#endif
#ifdef ALIGNOF_SIZE_T
_Static_assert(ALIGNOF_SIZE_T == _Alignof(size_t), "ALIGNOF_SIZE_T");
#endif
#ifdef ALIGNOF_MAX_ALIGN_T
_Static_assert(ALIGNOF_MAX_ALIGN_T == _Alignof(max_align_t), "max_align_t");
#endif

int main(void) {
  _Static_assert(sizeof(void*) == 8, "64-bit only");
  _Static_assert(sizeof(((PyASCIIObject*)0)->state) == 4, "state word");
  VAL("hexversion", PY_VERSION_HEX);
  OFF("object_type", PyObject, ob_type);
  OFF("code_filename", PyCodeObject, co_filename);
  OFF("code_name", PyCodeObject, co_name);
  OFF("code_firstlineno", PyCodeObject, co_firstlineno);
  OFF("unicode_length", PyASCIIObject, length);
  OFF("unicode_state", PyASCIIObject, state);
  STATE_MASK("state_kind_mask", kind);
  STATE_MASK("state_compact_mask", compact);
  STATE_MASK("state_ascii_mask", ascii);
  VAL("ascii_data", sizeof(PyASCIIObject));
  VAL("compact_data", sizeof(PyCompactUnicodeObject));
"""

C_FRAME_OBJECT = r"""
  _Static_assert(sizeof(((PyFrameObject*)0)->f_lasti) == 4, "f_lasti");
  STATE_MASK("state_ready_mask", ready);
  OFF("tstate_frame", PyThreadState, frame);
  OFF("frame_previous", PyFrameObject, f_back);
  OFF("frame_code", PyFrameObject, f_code);
  OFF("frame_lasti", PyFrameObject, f_lasti);
  VAL("lasti_unit", {lasti_unit});
"""

C_INTERPRETER_FRAME_COMMON = r"""
  _Static_assert(sizeof(((_PyInterpreterFrame*)0)->owner) == 1, "owner");
  OFF("frame_previous", _PyInterpreterFrame, previous);
  OFF("frame_owner", _PyInterpreterFrame, owner);
  VAL("owner_generator", FRAME_OWNED_BY_GENERATOR);
  VAL("code_unit_size", sizeof(_Py_CODEUNIT));
  OFF("code_qualname", PyCodeObject, co_qualname);
  OFF("code_firsttraceable", PyCodeObject, _co_firsttraceable);
  OFF("code_adaptive", PyCodeObject, co_code_adaptive);
"""

C_3_11 = r"""
  STATE_MASK("state_ready_mask", ready);
  OFF("tstate_cframe", PyThreadState, cframe);
  OFF("cframe_current_frame", _PyCFrame, current_frame);
  OFF("frame_code", _PyInterpreterFrame, f_code);
  OFF("frame_instr", _PyInterpreterFrame, prev_instr);
  _Static_assert(sizeof(((_PyInterpreterFrame*)0)->is_entry) == 1, "entry");
  OFF("frame_is_entry", _PyInterpreterFrame, is_entry);
"""

C_3_12 = r"""
  OFF("tstate_cframe", PyThreadState, cframe);
  OFF("cframe_current_frame", _PyCFrame, current_frame);
  OFF("frame_code", _PyInterpreterFrame, f_code);
  OFF("frame_instr", _PyInterpreterFrame, prev_instr);
  VAL("owner_cstack", FRAME_OWNED_BY_CSTACK);
"""

# 3.13 also publishes its offsets in _Py_DebugOffsets; print where each one
# lives so the reader can compare them with the compiled-in values at start.
C_3_13 = r"""
  OFF("tstate_frame", PyThreadState, current_frame);
  OFF("frame_code", _PyInterpreterFrame, f_executable);
  OFF("frame_instr", _PyInterpreterFrame, instr_ptr);
  VAL("owner_cstack", FRAME_OWNED_BY_CSTACK);
  _Static_assert(offsetof(_PyRuntimeState, debug_offsets) == 0, "first");
  OFF("debug_free_threaded", _Py_DebugOffsets, free_threaded);
#define CHECK(name, dbg, actual)                                     \
  printf("check %s %ld %ld\n", name, (long)offsetof(_Py_DebugOffsets, dbg), \
         (long)(actual))
  CHECK("thread_state.current_frame", thread_state.current_frame,
        offsetof(PyThreadState, current_frame));
  CHECK("interpreter_frame.previous", interpreter_frame.previous,
        offsetof(_PyInterpreterFrame, previous));
  CHECK("interpreter_frame.executable", interpreter_frame.executable,
        offsetof(_PyInterpreterFrame, f_executable));
  CHECK("interpreter_frame.instr_ptr", interpreter_frame.instr_ptr,
        offsetof(_PyInterpreterFrame, instr_ptr));
  CHECK("interpreter_frame.owner", interpreter_frame.owner,
        offsetof(_PyInterpreterFrame, owner));
  CHECK("code_object.filename", code_object.filename,
        offsetof(PyCodeObject, co_filename));
  CHECK("code_object.name", code_object.name,
        offsetof(PyCodeObject, co_name));
  CHECK("code_object.qualname", code_object.qualname,
        offsetof(PyCodeObject, co_qualname));
  CHECK("code_object.firstlineno", code_object.firstlineno,
        offsetof(PyCodeObject, co_firstlineno));
  CHECK("code_object.co_code_adaptive", code_object.co_code_adaptive,
        offsetof(PyCodeObject, co_code_adaptive));
  CHECK("pyobject.ob_type", pyobject.ob_type, offsetof(PyObject, ob_type));
  CHECK("unicode_object.state", unicode_object.state,
        offsetof(PyASCIIObject, state));
  CHECK("unicode_object.length", unicode_object.length,
        offsetof(PyASCIIObject, length));
  CHECK("unicode_object.asciiobject_size", unicode_object.asciiobject_size,
        sizeof(PyASCIIObject));
"""

C_EPILOGUE = r"""
  return 0;
}
"""

# FrameLayout fields in declaration order (runtime/python/layouts/frame_layout.h);
# C++ designated initializers must follow it.
LAYOUT_FIELDS = (
    "object_type", "tstate_frame", "tstate_cframe", "cframe_current_frame",
    "frame_previous", "frame_code", "frame_lasti", "lasti_unit",
    "frame_instr", "frame_owner", "owner_generator", "owner_cstack",
    "frame_is_entry",
    "code_unit_size", "code_filename", "code_name", "code_qualname",
    "code_firstlineno", "code_firsttraceable", "code_adaptive",
    "unicode_length", "unicode_state", "state_kind_mask", "state_kind_shift",
    "state_compact_mask", "state_ascii_mask", "state_ready_mask",
    "ascii_data", "compact_data", "debug_free_threaded",
)
MASK_FIELDS = ("state_kind_mask", "state_compact_mask", "state_ascii_mask",
               "state_ready_mask")


class GeneratorError(Exception):
    pass


def c_source(minor):
    """Returns the measuring program for CPython 3.<minor>."""
    if minor <= 10:
        defines, includes = "", "#include <frameobject.h>"
        body = C_FRAME_OBJECT.replace(
            "{lasti_unit}", "sizeof(_Py_CODEUNIT)" if minor == 10 else "1")
    else:
        defines = "#define Py_BUILD_CORE 1"
        includes = '#include "internal/pycore_frame.h"'
        body = C_INTERPRETER_FRAME_COMMON
        body += {11: C_3_11, 12: C_3_12}.get(minor, C_3_13)
        if minor >= 13:
            includes += '\n#include "internal/pycore_runtime.h"'
    prologue = C_PROLOGUE.replace("{defines}", defines)
    prologue = prologue.replace("{includes}", includes)
    return prologue + body + C_EPILOGUE


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        raise GeneratorError("%s failed:\n%s%s" % (" ".join(cmd), proc.stdout,
                                                   proc.stderr))
    return proc.stdout


def interpreter_info(python):
    """Returns (version string, minor, free_threaded, include flags)."""
    out = run([python, "-c",
               "import sys, sysconfig; "
               "print(sys.version.split()[0]); print(sys.version_info[1]); "
               "print(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))); "
               "print(sysconfig.get_paths()['include'])"])
    version, minor, free_threaded, include = out.split("\n")[:4]
    config = python + "-config"
    if os.path.exists(config):
        flags = run([config, "--includes"]).split()
    else:
        flags = ["-I" + include]
    return version, int(minor), free_threaded == "True", flags


class Target:
    """Where the measuring program is compiled for and run."""

    def __init__(self, arch, compiler, run_prefix=(), link_flags=()):
        self.arch = arch
        self.compiler = compiler
        self.run_prefix = list(run_prefix)
        self.link_flags = list(link_flags)


# Cross measurement from an x86-64 host: Debian's cross compiler and
# qemu-user (packages g++-aarch64-linux-gnu, qemu-user-static). Static, so
# qemu needs no target loader or libc.
CROSS_TOOLS = {
    ("x86_64", "aarch64"): ("aarch64-linux-gnu-gcc", "qemu-aarch64-static"),
}


def make_target(arch, cc):
    host = platform.machine()
    if arch == host:
        return Target(arch, cc)
    tools = CROSS_TOOLS.get((host, arch))
    if tools is None:
        raise GeneratorError("cannot measure %s layouts on %s" % (arch, host))
    for tool in tools:
        if shutil.which(tool) is None:
            raise GeneratorError("%s not found (run `make deps`)" % tool)
    return Target(arch, tools[0], [tools[1]], ["-static"])


def sysroot_interpreter(sysroot, minor):
    """Version string and include flags of a target root's 3.<minor>, read
    from its headers (Debian keeps pyconfig.h in a multiarch folder)."""
    include = os.path.join(sysroot, "usr", "include", "python3.%d" % minor)
    patchlevel = os.path.join(include, "patchlevel.h")
    if not os.path.exists(patchlevel):
        return None
    with open(patchlevel) as f:
        match = re.search(r'#define PY_VERSION\s+"([^"]+)"', f.read())
    if match is None:
        raise GeneratorError("%s: no PY_VERSION" % patchlevel)
    # Debian's pyconfig.h includes <aarch64-linux-gnu/python3.X/pyconfig.h>
    # from the root's /usr/include, hence the whole root as sysroot.
    return match.group(1), ["--sysroot=" + sysroot, "-I" + include]


def measure(python, target, sysroot=None):
    """Compiles and runs the measuring program against one interpreter
    (or, with sysroot, against the headers of the root's 3.<minor>)."""
    if sysroot is not None:
        minor = python
        found = sysroot_interpreter(sysroot, minor)
        if found is None:
            return None
        version, flags = found
        python = "%s:/usr/bin/python3.%d" % (sysroot, minor)
    else:
        version, minor, free_threaded, flags = interpreter_info(python)
        if free_threaded:
            return None
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "layout.c")
        exe = os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write(c_source(minor))
        run([target.compiler, "-std=gnu11", "-w"] + flags + [src, "-o", exe] +
            target.link_flags)
        out = run(target.run_prefix + [exe])
    values, checks = {}, []
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "check":
            checks.append((parts[1], int(parts[2]), int(parts[3])))
        else:
            values[parts[0]] = int(parts[1])
    if values.pop("hexversion") >> 16 != (3 << 8 | minor):
        raise GeneratorError("%s: headers do not match the interpreter" % python)
    for key in MASK_FIELDS:
        values.setdefault(key, 0)
    kind_mask = values["state_kind_mask"]
    values["state_kind_shift"] = (kind_mask & -kind_mask).bit_length() - 1
    return {"version": version, "minor": minor, "python": python,
            "values": values, "checks": checks}


def find_interpreters(pyenv_root, minor):
    """Returns (primary, others): pyenv builds of 3.<minor> first."""
    pattern = os.path.join(pyenv_root, "versions", "3.%d.*" % minor)
    primary = []
    for path in sorted(glob.glob(pattern)):
        if not re.fullmatch(r"3\.%d\.\d+" % minor, os.path.basename(path)):
            continue  # 3.13.0t (free-threaded) and other variants
        python = os.path.join(path, "bin", "python3.%d" % minor)
        if os.path.exists(python):
            primary.append(python)
    others = [p for p in ("/usr/bin/python3.%d" % minor,
                          "/usr/local/bin/python3.%d" % minor)
              if os.path.exists(p) and os.path.realpath(p) not in
              [os.path.realpath(q) for q in primary]]
    return primary, others


def format_value(key, value):
    if key in MASK_FIELDS:
        return "0x%08x" % value
    return str(value)


def arch_block(arch, minor, measured):
    """The C++ text for one architecture, between its BEGIN/END markers."""
    values = measured["values"]
    family = "kFrameObject" if minor <= 10 else "kInterpreterFrame"
    lines = ["// BEGIN ARCH %s (CPython %s headers)" % (arch, measured["version"]),
             "inline constexpr FrameLayout kCpython3_%dStorage{" % minor,
             "    .major = 3,",
             "    .minor = %d," % minor,
             '    .generated_from = "%s",' % measured["version"],
             "    .family = FrameFamily::%s," % family]
    for key in LAYOUT_FIELDS:
        if key in values:
            lines.append("    .%s = %s," % (key, format_value(key, values[key])))
    checks = measured["checks"]
    if checks:
        lines.append("    .debug_check_count = %d," % len(checks))
        lines.append("    .debug_checks = {")
        for name, position, expected in checks:
            lines.append('        {"%s", %d, %d},' % (name, position, expected))
        lines.append("    },")
    lines.append("};")
    lines.append("inline constexpr const FrameLayout* kCpython3_%d = "
                 "&kCpython3_%dStorage;" % (minor, minor))
    lines.append("// END ARCH %s" % arch)
    return "\n".join(lines) + "\n"


BLOCK_RE = re.compile(r"// BEGIN ARCH (\S+) .*?// END ARCH \1\n", re.S)


def render_header(minor, blocks):
    """Whole header text for 3.<minor> from {arch: block text}."""
    out = ["// CPython 3.%d struct offsets for the frame reader." % minor,
           "//",
           "// GENERATED by runtime/python/layouts/generate_layouts.py from the",
           "// interpreter's own headers; do not edit. Each architecture block is",
           "// measured by a program compiled for that architecture (natively, or",
           "// cross-compiled and run under qemu-user with --arch); regenerating",
           "// adds or replaces only that architecture's block.",
           "#pragma once",
           "",
           '#include "runtime/python/layouts/frame_layout.h"',
           "",
           "namespace deepcontext::python::layouts {",
           ""]
    keyword = "#if"
    for arch in sorted(blocks):
        out.append("%s defined(%s)" % (keyword, ARCH_MACROS[arch]))
        out.append(blocks[arch].rstrip("\n"))
        keyword = "#elif"
    if blocks:
        out.append("#else")
    out.append("// No layout generated for this architecture: the reader reports")
    out.append("// the version as unsupported.")
    out.append("inline constexpr const FrameLayout* kCpython3_%d = nullptr;" % minor)
    if blocks:
        out.append("#endif")
    out += ["", "}  // namespace deepcontext::python::layouts", ""]
    return "\n".join(out)


def without_versions(text):
    """Header text without the patch release it was generated from."""
    return re.sub(r'(CPython \S+ headers|generated_from = "[^"]*")', "", text)


def existing_blocks(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        text = f.read()
    return {m.group(1): m.group(0) for m in BLOCK_RE.finditer(text)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pyenv-root", default=os.environ.get(
        "PYENV_ROOT", os.path.expanduser("~/.pyenv")))
    parser.add_argument("--out-dir", default=os.path.dirname(
        os.path.abspath(__file__)))
    parser.add_argument("--cc", default=os.environ.get("CC") or
                        shutil.which("cc") or "gcc")
    parser.add_argument("--check", action="store_true",
                        help="fail if a header would change; write nothing")
    parser.add_argument("--arch", default=platform.machine(),
                        help="architecture to measure (default: this one; "
                        "aarch64 is measured from x86-64 with a cross "
                        "compiler and qemu-user)")
    parser.add_argument("--sysroot",
                        help="root filesystem of --arch whose python3.X "
                        "headers must agree too (e.g. a Debian arm64 root)")
    args = parser.parse_args()

    arch = args.arch
    if arch not in ARCH_MACROS:
        sys.exit("unsupported architecture %s (add it to ARCH_MACROS)" % arch)
    target = make_target(arch, args.cc)
    # A host's /usr/bin/python3.X has the host's pyconfig.h: when measuring
    # another architecture only pyenv builds and the target root count.
    cross = arch != platform.machine()
    stale = []
    for minor in SUPPORTED_MINORS:
        primary, others = find_interpreters(args.pyenv_root, minor)
        if cross:
            others = []
        measured = [m for m in (measure(p, target) for p in primary + others)
                    if m is not None]
        if args.sysroot:
            in_root = measure(minor, target, sysroot=args.sysroot)
            if in_root is not None:
                measured.append(in_root)
        path = os.path.join(args.out_dir, "cpython_3_%d.h" % minor)
        if not measured:
            print("3.%d: no interpreter found, %s left as is" % (minor, path))
            continue
        reference = measured[0]
        for other in measured[1:]:
            if (other["values"], other["checks"]) != (reference["values"],
                                                      reference["checks"]):
                raise GeneratorError("3.%d: %s and %s disagree on the layout" % (
                    minor, reference["python"], other["python"]))
        blocks = existing_blocks(path)
        blocks[arch] = arch_block(arch, minor, reference)
        text = render_header(minor, blocks)
        old = open(path).read() if os.path.exists(path) else None
        names = ", ".join(m["version"] + " (" + m["python"] + ")" for m in measured)
        if old == text:
            print("3.%d: %s up to date (%s)" % (minor, path, names))
        elif args.check and old is not None and \
                without_versions(old) == without_versions(text):
            # Same offsets, measured from another patch release (e.g. only
            # Debian's 3.11.2 where the header came from pyenv's 3.11.7).
            print("3.%d: %s agrees (%s)" % (minor, path, names))
        elif args.check:
            stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
            print("3.%d: wrote %s (%s)" % (minor, path, names))
    if stale:
        sys.exit("stale layout headers: " + ", ".join(stale))


if __name__ == "__main__":
    try:
        main()
    except GeneratorError as e:
        sys.exit(str(e))
