"""Attaches framework adapters: now for frameworks already imported, or right
after their import for the others (a sys.meta_path hook that wraps the
module's exec_module)."""

import importlib.abc
import importlib.util
import sys

from . import _jax_hook, _runtime, _torch_adapter

_hook = None


def _attach_torch(torch):
    try:
        _torch_adapter.install(torch)
        _runtime.set_metadata("torch_adapter", "ok")
    except Exception as error:  # the program must run on without ops
        _runtime.set_metadata("torch_adapter", "failed: %s" % str(error).splitlines()[0])
        _torch_adapter.report_failure(torch, error)


class _PostImportHook(importlib.abc.MetaPathFinder):
    """Runs a callback once a watched top-level module finished importing."""

    def __init__(self, callbacks):
        self._callbacks = callbacks
        self._busy = set()

    def find_spec(self, name, path=None, target=None):
        callback = self._callbacks.get(name)
        if callback is None or name in self._busy:
            return None
        self._busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            del self._callbacks[name]
            callback(module)

        spec.loader.exec_module = exec_module
        return spec


def attach():
    """Installs adapters for imported frameworks and watches for the others."""
    global _hook
    pending = {}
    if "torch" in sys.modules and hasattr(sys.modules["torch"], "_C"):
        _attach_torch(sys.modules["torch"])
    else:
        pending["torch"] = _attach_torch
    if "jax" in sys.modules:
        _jax_hook.attach(sys.modules["jax"])
    else:
        pending["jax"] = _jax_hook.attach
    if pending and _hook is None:
        _hook = _PostImportHook(pending)
        sys.meta_path.insert(0, _hook)
