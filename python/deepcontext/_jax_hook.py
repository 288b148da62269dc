"""Hands each module JAX compiles to the runtime, for the source lines of
its operations.

JAX records the Python traceback of every operation it traces; XLA keeps it
in the compiled module (its stack frame index and each instruction's
stack_frame_id), printed in the module's HLO text. Wrapping
jax._src.compiler.backend_compile_and_load (the one place JAX 0.4-0.11 hands
a module to XLA to compile and load) gives every new executable; its HLO
text goes to deepcontext_xla_register_module. A persistent compilation cache
hit compiles nothing and registers nothing: those modules' operations stay
without source lines. Nothing here may fail the program."""

import functools

from . import _runtime

_MARK = "_deepcontext_wrapped"
registered = 0  # instructions with source lines, over all modules (tests read it)


def register(executable):
    """Registers the modules of a loaded executable; returns how many
    instructions got source lines."""
    global registered
    count = 0
    try:
        modules = executable.hlo_modules()
    except Exception:  # another client or version without the accessor
        return 0
    for module in modules:
        try:
            count += _runtime.register_xla_module(module.to_string())
        except Exception:
            continue
    registered += count
    return count


def attach(jax):
    """Wraps JAX's compile entry point once; False when it is not there."""
    del jax  # imported: its compiler module is loaded
    try:
        from jax._src import compiler
    except Exception:
        return False
    original = getattr(compiler, "backend_compile_and_load", None)
    if original is None or getattr(original, _MARK, False):
        return original is not None

    @functools.wraps(original)
    def backend_compile_and_load(*args, **kwargs):
        executable = original(*args, **kwargs)
        # Also outside a profile() region: the module may run inside one.
        register(executable)
        return executable

    setattr(backend_compile_and_load, _MARK, True)
    compiler.backend_compile_and_load = backend_compile_and_load
    return True
