"""The Python package hands each module JAX compiles to the runtime, for the
source lines of its operations (python/deepcontext/_jax_hook.py). JAX is
stood in for by a package with the same compile entry point, returning an
executable whose module text was recorded from JAX 0.11.2."""

import os
import textwrap

from conftest import PYTHON, run_profiled

HLO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "runtime", "xla",
                   "fixtures", "hlo_train_step.txt")

_FAKE_COMPILER = textwrap.dedent('''
    import os

    class _Module:
        def to_string(self):
            with open(os.environ["FAKE_HLO"]) as f:
                return f.read()

    class _Executable:
        def hlo_modules(self):
            return [_Module()]

    def backend_compile_and_load(backend, module, devices, options, callbacks):
        return _Executable()
''')

_PROGRAM = textwrap.dedent('''
    import jax
    from jax._src import compiler
    compiler.backend_compile_and_load(None, None, None, None, [])
    from deepcontext import _jax_hook
    print("registered=%d" % _jax_hook.registered)
''')


def _fake_jax(tmp_path):
    src = tmp_path / "site" / "jax" / "_src"
    src.mkdir(parents=True)
    (tmp_path / "site" / "jax" / "__init__.py").write_text("from jax._src import compiler\n")
    (src / "__init__.py").write_text("")
    (src / "compiler.py").write_text(_FAKE_COMPILER)
    return tmp_path / "site"


def test_each_compiled_module_reaches_the_runtime(tmp_path):
    site = _fake_jax(tmp_path)
    result = run_profiled([PYTHON, "-c", _PROGRAM], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site), "FAKE_HLO": HLO}, check=0)
    out = result.stdout.decode()
    # The recorded train_step: every instruction with a traceback through
    # the jitted function.
    count = int(out.split("registered=")[1].split()[0])
    assert count >= 20, out + result.stderr.decode()


def test_a_module_without_a_frame_index_registers_nothing(tmp_path):
    site = _fake_jax(tmp_path)
    plain = tmp_path / "plain.txt"
    plain.write_text("HloModule jit_f\n\nENTRY %main {\n  ROOT %x = f32[] constant(1)\n}\n")
    result = run_profiled([PYTHON, "-c", _PROGRAM], tmp_path / "p.dctx",
                          env={"PYTHONPATH": str(site), "FAKE_HLO": str(plain)}, check=0)
    assert "registered=0" in result.stdout.decode(), result.stderr.decode()
