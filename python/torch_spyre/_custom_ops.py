"""The ``spyre::`` operators torch-spyre users call, with torch-spyre's names and schemas:

* ``torch.ops.spyre.overwrite(input, output, dims, offsets)``: copies ``input`` into ``output``
  at ``offsets`` along ``dims`` (in place; the slice of ``output`` is ``input``'s size);
* ``torch.ops.spyre.overwrite_f(...)``: the same on a copy of ``output``, returned;
* ``torch.ops.spyre.quantize_fp8_with_scale(input, scale)`` and
  ``quantize_weight_fp8_with_scale``: ``clamp(input * (1 / scale), -448, 448)`` as
  ``float8_e4m3fn``;
* ``torch.ops.spyre.dequantize_fp8_with_scale(input, scale)``: ``input.to(float16) * scale``.

Each is a ``CompositeImplicitAutograd`` kernel over ordinary ATen ops, so eager calls and
compiled graphs both run it as those ops: the pointwise arithmetic on the card, the fp8 format
conversion through the CPU (the simulated card stores float8_e4m3fn but has no conversion
kernel), with the usual ``FallbackWarning``. ``scale`` broadcasts (a 0-d scale, or per row
``[..., 1]``).
"""

from __future__ import annotations

import torch

FP8_E4M3_MAX = 448.0

_lib = torch.library.Library("spyre", "DEF")  # noqa: TOR901 - the library lives for the process

_lib.define("overwrite(Tensor input, Tensor(a!) output, int[] dims, int[] offsets) -> ()")
_lib.define("overwrite_f(Tensor input, Tensor output, int[] dims, int[] offsets) -> Tensor")
_lib.define("quantize_fp8_with_scale(Tensor input, Tensor scale) -> Tensor")
_lib.define("quantize_weight_fp8_with_scale(Tensor input, Tensor scale) -> Tensor")
_lib.define("dequantize_fp8_with_scale(Tensor input, Tensor scale) -> Tensor")


def _slot(input: torch.Tensor, output: torch.Tensor, dims: list[int], offsets: list[int]) -> torch.Tensor:
    """The view of ``output`` that ``input`` overwrites."""
    if len(dims) != len(offsets):
        raise ValueError(f"spyre.overwrite: {len(dims)} dims but {len(offsets)} offsets")
    if input.dim() != output.dim():
        raise ValueError(f"spyre.overwrite: input has {input.dim()} dims, output {output.dim()}")
    view = output
    for dim, offset in zip(dims, offsets):
        if offset < 0 or offset + input.size(dim) > output.size(dim):
            raise IndexError(f"spyre.overwrite: offset {offset} + size {input.size(dim)} is out of "
                             f"range for dim {dim} of size {output.size(dim)}")
        view = view.narrow(dim, offset, input.size(dim))
    if view.shape != input.shape:
        raise ValueError(f"spyre.overwrite: input {tuple(input.shape)} does not match the slot "
                         f"{tuple(view.shape)} of output {tuple(output.shape)} (dims {list(dims)})")
    return view


def _overwrite(input: torch.Tensor, output: torch.Tensor, dims: list[int], offsets: list[int]) -> None:
    _slot(input, output, dims, offsets).copy_(input)


def _overwrite_f(input: torch.Tensor, output: torch.Tensor, dims: list[int], offsets: list[int]) -> torch.Tensor:
    result = output.clone()
    _slot(input, result, dims, offsets).copy_(input)
    return result


def _quantize(input: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    inv = torch.reciprocal(scale.to(input.dtype))
    return (input * inv).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX).to(torch.float8_e4m3fn)


def _dequantize(input: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return input.to(torch.float16) * scale.to(torch.float16)


_lib.impl("overwrite", _overwrite, "CompositeImplicitAutograd")
_lib.impl("overwrite_f", _overwrite_f, "CompositeImplicitAutograd")
_lib.impl("quantize_fp8_with_scale", _quantize, "CompositeImplicitAutograd")
_lib.impl("quantize_weight_fp8_with_scale", _quantize, "CompositeImplicitAutograd")
_lib.impl("dequantize_fp8_with_scale", _dequantize, "CompositeImplicitAutograd")
