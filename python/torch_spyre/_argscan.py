"""Cheap scans of an ATen op's ``(args, kwargs)`` for the eager kernels, which run them on every
op call: torch's ``tree_flatten`` costs tens of microseconds per call (pytree specs, node-type
lookups), while an op's arguments are only ever tensors, numbers and other leaves, possibly in
lists or tuples (``cat``'s tensor list, sizes) and kwargs.

* ``leaves`` is ``tree_flatten((args, kwargs))[0]`` for those structures.
* ``signature`` is a hashable description of everything an op's *meta* result (its shape and
  dtype) can depend on: per tensor its shape, strides, dtype and device type; per other leaf
  its type and value (``1`` and ``1.0`` and ``True`` are equal in Python but promote
  differently). ``None`` when a leaf is not hashable: the caller then does not cache.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["leaves", "signature"]


def _collect(x: Any, out: list) -> None:
    if isinstance(x, (list, tuple)):  # torch.Size too, as pytree does
        for y in x:
            _collect(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _collect(y, out)
    else:
        out.append(x)


def leaves(args: tuple, kwargs: dict) -> list:
    out: list = []
    _collect(args, out)
    _collect(kwargs, out)
    return out


def _key(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return (torch.Tensor, tuple(x.shape), x.stride(), x.dtype, x.device.type)
    if isinstance(x, (list, tuple)):
        return (type(x), tuple(_key(y) for y in x))
    hash(x)  # TypeError for unhashable leaves
    return (type(x), x)


def signature(args: tuple, kwargs: dict) -> tuple | None:
    try:
        return (_key(args), tuple((k, _key(v)) for k, v in kwargs.items()))
    except (TypeError, RuntimeError):  # unhashable leaf; a tensor without strides
        return None
