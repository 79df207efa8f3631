"""Tensor additions for spyre tensors (torch-spyre's _monkey_patch):

* ``Tensor.device_tensor_layout()``: the SpyreTensorLayout of a spyre tensor's storage (views
  report their storage's layout), ``None`` for tensors on other devices;
* ``Tensor.to(..., device_layout=stl)``: copy to spyre into a storage tiled by ``stl``;
* ``torch.empty(..., device_layout=stl)`` and ``torch.empty_strided(..., device_layout=stl)``:
  a spyre tensor whose storage is tiled by ``stl``;
* ``repr`` of spyre tensors: printed from a host copy, since printing runs compute ops that the
  device only has through torch.compile.

Both replacements are plain Python functions that dynamo inlines: without a ``device_layout``
the patched ``Tensor.to`` calls the original method descriptor, which dynamo traces as the
tensor method it is only while it is an attribute of ``torch.Tensor`` (dynamo lists the
tensor methods it puts in graphs from ``dir(torch.Tensor)``), so the original stays reachable
as ``Tensor._spyre_base_to``. Without that alias every ``.to()`` in any compiled model would be
a graph break once torch_spyre is installed (tests/python/test_citizen.py checks the graph
counts with and without the package).
"""

from __future__ import annotations

from typing import Any

import torch

from . import _C
from ._C import SpyreTensorLayout
from ._no_trace import no_trace

_applied = False
_orig_to = torch._C.TensorBase.to
_orig_repr = torch.Tensor.__repr__
_orig_empty = torch.empty
_orig_empty_strided = torch.empty_strided


def _contiguous_strides(size: list[int]) -> list[int]:
    strides = [1] * len(size)
    for i in range(len(size) - 2, -1, -1):
        strides[i] = strides[i + 1] * max(size[i + 1], 1)
    return strides


def device_tensor_layout(self: torch.Tensor) -> SpyreTensorLayout | None:
    """SpyreTensorLayout of this tensor's device storage (None if not on spyre)."""
    if self.device.type != "spyre":
        return None
    return _C.get_spyre_tensor_layout(self)


def _to_with_layout(self: torch.Tensor, args: tuple, kwargs: dict, layout: Any) -> torch.Tensor:
    if not isinstance(layout, SpyreTensorLayout):
        raise TypeError(
            f"Tensor.to(device_layout=...) expects a torch.spyre.SpyreTensorLayout, "
            f"got {type(layout).__name__}"
        )
    device, dtype, _non_blocking, memory_format = (
        torch._C._nn._parse_to(*args, **kwargs) if (args or kwargs) else (None, None, False, None)
    )
    if device is not None and device.type != "spyre":
        raise ValueError(f"Tensor.to(device_layout=...) copies to spyre, but device={device} was given")
    if memory_format not in (None, torch.preserve_format):
        raise ValueError("Tensor.to(device_layout=...) fixes the layout; memory_format is not allowed")
    if device is not None:
        _C.set_device(device)  # validates the index
    dtype = dtype or self.dtype
    size = list(self.shape)
    # The layout's stride_map names host strides: accept the contiguous ones (what
    # SpyreTensorLayout(size, dtype) assumes) or this tensor's own.
    candidates = [_contiguous_strides(size)]
    if list(self.stride()) != candidates[0]:
        candidates.append(list(self.stride()))
    error: Exception | None = None
    for stride in candidates:
        try:
            dst = _C.empty_with_layout(size, stride, dtype, layout)
        except NotImplementedError as e:  # layout does not describe these strides
            error = e
            continue
        dst.copy_(self)
        return dst
    eps = layout.device_size[-1]
    if self.dim() > 1 and len(layout.device_size) == 2 and layout.stride_map == [eps, 1]:
        # A flat layout, of the flattened tensor (torch-spyre's "folding": [40, 60] in 38 sticks
        # of 64): the storage holds the flat vector; the result is its view in this shape.
        try:
            flat = _C.empty_with_layout([self.numel()], [1], dtype, layout)
        except NotImplementedError:
            pass
        else:
            flat.copy_(self.reshape(-1))
            return flat.view(size)
    assert error is not None
    raise error


@no_trace  # as a frame of its own (called from untraced code); dynamo still inlines it
def _to(self: torch.Tensor, *args: Any, device_layout: Any = None, **kwargs: Any) -> torch.Tensor:
    if device_layout is None:
        return _orig_to(self, *args, **kwargs)
    return _to_with_layout(self, args, kwargs, device_layout)


def _empty_in_layout(size: list[int], stride: list[int] | None, layout: Any, kwargs: dict) -> torch.Tensor:
    if not isinstance(layout, SpyreTensorLayout):
        raise TypeError(f"device_layout= expects a torch.spyre.SpyreTensorLayout, got {type(layout).__name__}")
    device = kwargs.pop("device", None)
    if device is not None and torch.device(device).type != "spyre":
        raise ValueError(f"device_layout= allocates on spyre, but device={device} was given")
    dtype = kwargs.pop("dtype", None) or torch.get_default_dtype()
    requires_grad = bool(kwargs.pop("requires_grad", False))
    if kwargs.pop("layout", torch.strided) != torch.strided:
        raise ValueError("device_layout= allocates a strided tensor; layout= must be torch.strided")
    if kwargs.pop("memory_format", None) not in (None, torch.contiguous_format, torch.preserve_format):
        raise ValueError("device_layout= fixes the layout; memory_format is not allowed")
    if kwargs.pop("pin_memory", False):
        raise ValueError("device_layout= allocates on spyre; pin_memory is not allowed")
    if kwargs:
        raise TypeError(f"unexpected keyword arguments with device_layout=: {sorted(kwargs)}")
    if device is not None:
        _C.set_device(torch.device(device))  # validates the index
    out = _C.empty_with_layout(size, stride if stride is not None else _contiguous_strides(size), dtype, layout)
    return out.requires_grad_() if requires_grad else out


@no_trace
def _empty(*size: Any, device_layout: Any = None, **kwargs: Any) -> torch.Tensor:
    if device_layout is None:
        return _orig_empty(*size, **kwargs)
    dims = list(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else list(size)
    return _empty_in_layout([int(d) for d in dims], None, device_layout, kwargs)


@no_trace
def _empty_strided(size: Any, stride: Any, *, device_layout: Any = None, **kwargs: Any) -> torch.Tensor:
    if device_layout is None:
        return _orig_empty_strided(size, stride, **kwargs)
    return _empty_in_layout([int(d) for d in size], [int(s) for s in stride], device_layout, kwargs)


def _has_spyre_data(t: torch.Tensor) -> bool:
    """A real spyre tensor (not a FakeTensor, functional or functorch wrapper, meta or other
    subclass, which torch prints without their data)."""
    return (type(t) in (torch.Tensor, torch.nn.Parameter) and t.device.type == "spyre"
            and not torch._is_functional_tensor(t) and not torch._C._functorch.is_functorch_wrapped_tensor(t))


@no_trace  # repr of a tensor is a graph break anyway; its frame runs untraced, like torch's
def _repr(self: torch.Tensor, *, tensor_contents: Any = None) -> str:
    if tensor_contents is None and _has_spyre_data(self):
        host = self.detach().cpu()
        tensor_contents = torch._tensor_str._tensor_str(host, len("tensor("))
        # torch-spyre prints the device last: "tensor([1., 2.], dtype=torch.float16, device='spyre:0')".
        text = _orig_repr(self, tensor_contents=tensor_contents)
        dev = f", device='{self.device}'"
        if dev in text and text.endswith(")"):
            text = text.replace(dev, "", 1)[:-1] + dev + ")"
        return text
    return _orig_repr(self, tensor_contents=tensor_contents)


def apply() -> None:
    global _applied
    if _applied:
        return
    torch.Tensor.device_tensor_layout = device_tensor_layout
    # Keep the original method a tensor method for dynamo (see the module docstring).
    torch.Tensor._spyre_base_to = _orig_to
    _to.__doc__ = _orig_to.__doc__
    torch.Tensor.to = _to
    torch.Tensor.__repr__ = _repr
    for name, wrapper, orig in (("empty", _empty, _orig_empty), ("empty_strided", _empty_strided, _orig_empty_strided)):
        wrapper.__doc__ = orig.__doc__
        wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
        setattr(torch, name, wrapper)
    _applied = True
