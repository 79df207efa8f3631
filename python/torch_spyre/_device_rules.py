"""Device rules of ops on spyre tensors, as stock torch applies them to CUDA tensors.

Every tensor operand of an op must be on the op's device; a 0-d CPU tensor (a wrapped Python
scalar, ``x * torch.tensor(2.0)``) is allowed as CUDA allows it. Otherwise the op raises
torch's TensorIterator error, naming the spyre device first:

    RuntimeError: Expected all tensors to be on the same device, but found at least two
    devices, spyre:0 and cpu!

Ops whose contract is to take operands on other devices are exempt (copies and device moves,
indexing with CPU index tensors, as CUDA allows ``x_cuda[cpu_index]``).

The eager kernels (``_eager``) call ``check_same_device`` before anything else; compiled graphs
meet the same rule in dynamo's fake-tensor propagation, which raises torch's own error.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

__all__ = ["check_same_device", "mixed_device_message"]

# Base names (schema name without "aten::") that take tensors on any device by design.
_EXEMPT = {
    "copy", "copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "set_", "lift_fresh",
    "lift_fresh_copy", "index", "_unsafe_index", "index_put", "index_put_", "_index_put_impl_",
    "_unsafe_index_put", "_local_scalar_dense", "is_same_size", "_has_same_storage_numel",
    "_pin_memory", "is_pinned", "record_stream",
}


def mixed_device_message(common: torch.device, other: torch.device) -> str:
    return ("Expected all tensors to be on the same device, but found at least two devices, "
            f"{common} and {other}!")


def _device_str(d: torch.device) -> str:
    if d.type == "spyre" and d.index is None:
        return f"spyre:{torch.spyre.current_device()}"
    return str(d)


@functools.lru_cache(maxsize=None)
def _exempt(op: Any) -> bool:
    schema = getattr(op, "_schema", None)
    return schema is not None and schema.name.split("::")[-1] in _EXEMPT


def check_same_device(op: Any, flat: list) -> None:
    """Raises RuntimeError (torch's wording) when a tensor operand of ``op`` (``flat``: the
    leaves of its arguments, ``_argscan.leaves``) is on another device than its spyre operands;
    0-d CPU tensors are allowed."""
    if _exempt(op):
        return
    common: torch.device | None = None
    other: torch.device | None = None
    for x in flat:
        if not isinstance(x, torch.Tensor):
            continue
        d = x.device
        if d.type == "spyre":
            if d.index is None:
                d = torch.device("spyre", torch.spyre.current_device())
            if common is None:
                common = d
            elif d != common and other is None:
                other = d
        elif d.type != "meta" and not (d.type == "cpu" and x.dim() == 0) and other is None:
            other = d
    if common is not None and other is not None:
        raise RuntimeError(mixed_device_message(torch.device(_device_str(common)), other))
