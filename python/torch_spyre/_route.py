"""The default torch.compile backend ("inductor") compiles graphs that work on spyre with our
"spyre" backend; other graphs go to inductor unchanged.

Every way of asking for inductor ends in one of two places:

* ``torch.compile(fn)`` / ``torch.compile(fn, backend="inductor")`` call
  ``torch._TorchCompileInductorWrapper.__call__``: wrapped here, so a spyre graph never imports
  inductor;
* ``torch._dynamo.optimize("inductor")``, ``CompileCounterWithBackend("inductor")``,
  ``lookup_backend("inductor")`` and direct callers reach
  ``torch._inductor.compile_fx.compile_fx``, which the first path calls too: wrapped when that
  module is first imported (a ``sys.meta_path`` hook), so ``import torch`` still imports neither
  dynamo nor inductor.

A graph goes to our backend when it touches spyre (``touches_spyre``: a spyre input, a spyre
value inside, or a factory with ``device="spyre"``). A graph routed here is compiled by our backend as a whole: inductor's ``config_patches``,
``inner_compile`` and the like do not apply to it (our compiler is not inductor); ``compile_fx``'s
``decompositions`` do (applied over the spyre decompositions).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from typing import Any

import torch

__all__ = ["install", "has_spyre_tensor", "touches_spyre"]

COMPILE_FX = "torch._inductor.compile_fx"
_lock = threading.Lock()


def has_spyre_tensor(xs: Any) -> bool:
    """True if the sequence ``xs`` (a graph's example inputs) holds a spyre tensor."""
    try:
        return any(isinstance(x, torch.Tensor) and x.device.type == "spyre" for x in xs)
    except TypeError:  # not iterable: not example inputs we know
        return False


def _is_spyre_value(v: Any) -> bool:
    if isinstance(v, (tuple, list)):
        return any(_is_spyre_value(x) for x in v)
    return isinstance(v, torch.Tensor) and v.device.type == "spyre"


def _is_spyre_device(d: Any) -> bool:
    if not isinstance(d, (str, torch.device)):
        return False
    try:
        return torch.device(d).type == "spyre"
    except (RuntimeError, TypeError):
        return False


def touches_spyre(model_: Any, inputs_: Any) -> bool:
    """True if the graph ``model_`` works on spyre: a spyre example input, a node whose traced
    value is a spyre tensor, or a factory with ``device="spyre"`` (``torch.arange(n,
    device="spyre")`` has no tensor input at all)."""
    if has_spyre_tensor(inputs_):
        return True
    graph = getattr(model_, "graph", None)
    for node in getattr(graph, "nodes", ()):
        meta = getattr(node, "meta", {})
        if _is_spyre_value(meta.get("example_value", meta.get("val"))):
            return True
        if _is_spyre_device(node.kwargs.get("device")):
            return True
    return False


def _spyre_backend(model_: Any, inputs_: Any, decompositions: Any = None) -> Any:
    from ._compile import spyre_backend

    return spyre_backend(model_, inputs_, decompositions=decompositions)


def _wrap_inductor_wrapper() -> None:
    wrapper = getattr(torch, "_TorchCompileInductorWrapper", None)
    if wrapper is None or getattr(wrapper.__call__, "_spyre_routed", False):
        return
    original = wrapper.__call__

    def __call__(self: Any, model_: Any, inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        if touches_spyre(model_, inputs_):
            return _spyre_backend(model_, inputs_)
        return original(self, model_, inputs_, *args, **kwargs)

    __call__._spyre_routed = True  # type: ignore[attr-defined]
    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__call__ = __call__


def wrap_compile_fx(module: Any) -> None:
    """Replaces ``module.compile_fx`` (``torch._inductor.compile_fx``) by a function that sends
    graphs with spyre inputs to our backend and the others to inductor. Idempotent."""
    original = getattr(module, "compile_fx", None)
    if original is None or getattr(original, "_spyre_routed", False):
        return

    def compile_fx(model_: Any, example_inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        if touches_spyre(model_, example_inputs_):
            # compile_fx's decompositions (5th parameter) apply on spyre too, over ours
            decomps = kwargs.get("decompositions", args[2] if len(args) > 2 else None)
            return _spyre_backend(model_, example_inputs_, decomps)
        return original(model_, example_inputs_, *args, **kwargs)

    compile_fx.__name__ = original.__name__
    compile_fx.__qualname__ = original.__qualname__
    compile_fx.__doc__ = original.__doc__
    compile_fx.__wrapped__ = original  # type: ignore[attr-defined]
    compile_fx._spyre_routed = True  # type: ignore[attr-defined]
    module.compile_fx = compile_fx


class _WrappingLoader(importlib.abc.Loader):
    """The loader of ``torch._inductor.compile_fx`` with one step added after the module ran:
    ``wrap_compile_fx``. Everything else (``get_source``, ``get_code``, …) is the original's."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        wrap_compile_fx(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _CompileFxFinder(importlib.abc.MetaPathFinder):
    """Finds ``torch._inductor.compile_fx`` like the other finders would, with a loader that
    wraps ``compile_fx`` once the module has run. Answers None for every other module."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != COMPILE_FX:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and not isinstance(spec.loader, _WrappingLoader):
                    spec.loader = _WrappingLoader(spec.loader)
                return spec
        return None


_finder = _CompileFxFinder()


def install() -> None:
    """Routes both paths (idempotent). Imports neither dynamo nor inductor."""
    with _lock:
        _wrap_inductor_wrapper()
        module = sys.modules.get(COMPILE_FX)
        if module is not None:
            wrap_compile_fx(module)
        elif _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
