"""Dynamo guards on the device layout: a compiled function recompiles when a spyre input arrives
in a SpyreTensorLayout other than the one it was compiled for (torch-spyre's TENSOR_MATCH
extension). Without it a second layout would reuse the graph: still correct here, since
``CompiledGraph.run`` restages inputs into the layout it expects, but at the cost of a restage
per call and without the layout the compiler could have planned for.

Installed by ``torch_spyre._compile`` (imported when torch.compile first uses the spyre backend,
before dynamo builds that frame's guards), so ``import torch`` does not import dynamo.
"""

from __future__ import annotations

from typing import Any

import torch

from . import _C

_installed = False


def _layout_of(t: Any) -> Any:
    """What the guard compares for a real spyre tensor: ``"default"`` when its storage has the
    layout ``empty_strided`` gives its geometry (so a symbolic-shape graph is not specialised
    to one shape's layout), else the SpyreTensorLayout itself; None for fakes and other
    devices."""
    if not isinstance(t, torch.Tensor) or t.device.type != "spyre":
        return None
    if isinstance(t, torch._subclasses.FakeTensor) or torch._is_functional_tensor(t):
        return None
    try:
        return "default" if _C._has_default_layout(t) else _C.get_spyre_tensor_layout(t)
    except RuntimeError:  # a raw storage without a layout
        return None


def install() -> None:
    """Extends dynamo's TENSOR_MATCH guard with a layout check for spyre tensors. Idempotent."""
    global _installed
    if _installed:
        return
    from torch._dynamo.guards import GuardBuilder
    from torch.utils.weak import TensorWeakRef

    stock = GuardBuilder.TENSOR_MATCH

    def TENSOR_MATCH(self: Any, guard: Any, value: Any = None) -> None:  # noqa: N802 - dynamo's name
        stock(self, guard, value=value)
        if isinstance(value, TensorWeakRef):
            value = value()
        if value is None:
            value = self.get(guard)
        expected = _layout_of(value)
        if expected is None:
            return
        self.get_guard_manager(guard).add_lambda_guard(
            lambda x: x.device.type != "spyre" or _layout_of(x) == expected,
            [f"SpyreTensorLayout({guard.name}) is {expected}"],
            guard.user_stack,
        )

    # Keeps the name: dynamo dispatches some guard re-checks on the create function's name.
    TENSOR_MATCH.__qualname__ = stock.__qualname__
    GuardBuilder.TENSOR_MATCH = TENSOR_MATCH
    _installed = True
