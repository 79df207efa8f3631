"""Keeping dynamo out of our own Python: ``no_trace(fn)`` marks a function so that dynamo never
traces it nor anything it calls, like ``torch.compiler.disable`` (recursive), without importing
torch._dynamo (``import torch`` autoloads us; dynamo costs seconds to import).

Our eager kernels, the CPU fallback and the runners of compiled partitions are Python functions
the dispatcher or a compiled graph calls. While a frame runs eagerly under torch.compile (after
a graph break, or after its compile failed), dynamo's frame hook sees every Python frame that
starts, including these: without the mark it traces them, breaks on the C++ calls inside,
recompiles once per op closure until the recompile limit, and the function stays slow for good.

The mark is dynamo's own per-code-object frame strategy (the one ``torch._dynamo.skip_code``
sets), with the recursive action SKIP as well: the frame and every frame it calls run without
dynamo. It lives on the code object, so it covers every closure of a kernel factory and
survives ``torch._dynamo.reset()`` (which only resets code dynamo has seen).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

try:
    from torch._C._dynamo.eval_frame import _FrameAction, _FrameExecStrategy, set_code_exec_strategy
except ImportError:  # a torch without dynamo's C hooks cannot trace us either
    set_code_exec_strategy = None


def no_trace(fn: F) -> F:
    """Marks ``fn`` (its code object) so dynamo runs it, and all it calls, untraced."""
    if set_code_exec_strategy is not None:
        set_code_exec_strategy(fn.__code__, _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP))
    return fn
