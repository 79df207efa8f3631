"""CPU fallback for ops the simulated card cannot run: move the spyre inputs to the CPU, run
the ATen op there, move the results back, warn once per op (``FallbackWarning``).

``SPYRE_STRICT=1`` (read at every call) raises ``Unsupported`` instead. Every fallback is
counted in ``fallback_counts`` (op name -> calls), which tests use to assert that an op really
ran on spyre.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import warnings
from typing import Any, Iterator

import torch
from torch.utils._pytree import tree_flatten, tree_map

from . import _config
from ._errors import FallbackWarning, strict_unsupported
from ._no_trace import no_trace

__all__ = ["FallbackWarning", "fallback_counts", "count_fallbacks", "strict", "run_on_cpu", "cpu_fallback_fn"]

fallback_counts: collections.Counter = collections.Counter()
_warned: set[str] = set()
_lock = threading.Lock()


def strict() -> bool:
    """SPYRE_STRICT (read now; an invalid value raises ConfigError)."""
    return _config.strict()


def note_fallback(op_name: str, reason: str) -> None:
    """Records (and warns about, once per op) a CPU fallback; raises under SPYRE_STRICT=1."""
    if strict():
        raise strict_unsupported(f"{op_name} cannot run on spyre ({reason})")
    with _lock:
        fallback_counts[op_name] += 1
        first = op_name not in _warned
        _warned.add(op_name)
    if first:
        warnings.warn(f"{op_name} ran on the CPU: {reason}", FallbackWarning, stacklevel=3)


@contextlib.contextmanager
def count_fallbacks() -> Iterator[collections.Counter]:
    """Yields a Counter that, on exit, holds the CPU fallbacks (op name -> calls) made inside."""
    with _lock:
        before = collections.Counter(fallback_counts)
    delta: collections.Counter = collections.Counter()
    try:
        yield delta
    finally:
        with _lock:
            for k, v in fallback_counts.items():
                if v - before.get(k, 0) > 0:
                    delta[k] = v - before.get(k, 0)


def _is_spyre(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "spyre"


def _to_cpu(x: Any) -> Any:
    if _is_spyre(x):
        return x.cpu()
    if isinstance(x, torch.device) and x.type == "spyre":
        return torch.device("cpu")
    if isinstance(x, str) and x.startswith("spyre"):
        return "cpu"
    return x


def _to_spyre(x: Any) -> Any:
    return x.to("spyre") if isinstance(x, torch.Tensor) and x.device.type == "cpu" else x


_INTS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _run_widening_ints(op: Any, cargs: tuple, ckwargs: dict) -> Any:
    """op on the CPU. Some CPU kernels have no integer form that other backends have (histc:
    "histogram_cpu" not implemented for 'Int', the int32 a MoE router builds for a non-CPU
    device): then the integer tensors run as float64 (exact for int32; int64 beyond 2^53 is
    not) and the op's floating results come back in the first integer operand's dtype."""
    try:
        return op(*cargs, **ckwargs)
    except NotImplementedError as e:
        if "not implemented for" not in str(e) or getattr(op, "_schema", None) is None:
            raise
        ints = [x for x in (*cargs, *ckwargs.values()) if isinstance(x, torch.Tensor) and x.dtype in _INTS]
        if not ints or any(a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments):
            raise
        widen = lambda x: x.double() if isinstance(x, torch.Tensor) and x.dtype in _INTS else x  # noqa: E731
        out = op(*tree_map(widen, cargs), **tree_map(widen, ckwargs))
        back = lambda x: x.to(ints[0].dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x  # noqa: E731
        return tree_map(back, out)


@no_trace
def run_on_cpu(op: Any, args: tuple, kwargs: dict) -> Any:
    """Runs an ATen op on CPU copies of its spyre arguments and returns spyre results. Mutated
    arguments (in-place and out= variants) are written back into the original spyre tensors,
    and returns that alias them are those originals."""
    from ._device import device, device_of

    # Results go back to the card of the spyre arguments (x.to("spyre") means the current one).
    with device(device_of(tree_flatten((args, kwargs))[0])):
        return _run_on_cpu(op, args, kwargs)


def _run_on_cpu(op: Any, args: tuple, kwargs: dict) -> Any:
    cargs = tree_map(_to_cpu, args)
    ckwargs = tree_map(_to_cpu, kwargs)
    result = _run_widening_ints(op, cargs, ckwargs)
    schema = getattr(op, "_schema", None)
    if schema is None:
        return tree_map(_to_spyre, result)
    mutated: dict[Any, torch.Tensor] = {}  # alias set -> original spyre tensor
    pos = 0
    for a in schema.arguments:
        if not a.kwarg_only and pos < len(args):
            orig, new = args[pos], cargs[pos]
            pos += 1
        elif a.name in kwargs:
            orig, new = kwargs[a.name], ckwargs[a.name]
        else:
            continue
        if a.alias_info is not None and a.alias_info.is_write and _is_spyre(orig):
            if tuple(orig.shape) != tuple(new.shape):
                orig.resize_(new.shape)
            orig.copy_(new)
            for s in a.alias_info.before_set:
                mutated[s] = orig
    if not schema.returns:
        return result
    outs = list(result) if len(schema.returns) > 1 else [result]
    fixed = []
    for r, val in zip(schema.returns, outs):
        alias = next((mutated[s] for s in (r.alias_info.before_set if r.alias_info else ()) if s in mutated), None)
        fixed.append(alias if alias is not None else tree_map(_to_spyre, val))
    return tuple(fixed) if len(schema.returns) > 1 else fixed[0]


def op_name(op: Any) -> str:
    return str(op) if isinstance(op, torch._ops.OpOverload) else getattr(op, "__name__", str(op))


def cpu_fallback_fn(op: Any, reason: str) -> Any:
    """A callable that runs ``op`` through the CPU fallback (for FX graphs)."""

    @no_trace
    def fallback(*args: Any, **kwargs: Any) -> Any:
        note_fallback(op_name(op), reason)
        return run_on_cpu(op, args, kwargs)

    fallback.__name__ = f"cpu_fallback_{op_name(op).replace('.', '_')}"
    fallback._spyre_fallback_op = op  # type: ignore[attr-defined]
    return fallback
