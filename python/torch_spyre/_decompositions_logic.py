"""Decompositions of masks, logic and pow (registered into ``_decompositions.DECOMPOSITIONS`` on
import; they serve compiled graphs and eager kernels alike): any / all of any dtype, isin,
logical_and / or / xor, pow with a tensor exponent or a number base. generate()'s bookkeeping
(the EOS check, unfinished sequences) runs on the card through these."""

from __future__ import annotations

import math
from typing import Any

import torch

from ._decompositions import _register

aten = torch.ops.aten

_CARD_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int64, torch.bool)


def _nonzero_ones(x: torch.Tensor) -> torch.Tensor:
    """(x != 0) as 1.0 / 0.0 in fp16 (the stick geometry of a bool)."""
    nz = x if x.dtype == torch.bool else aten.ne.Scalar(x, 0)
    return aten.where.ScalarOther(nz, aten.full_like.default(nz, 1.0, dtype=torch.float16), 0.0)


def _reduced_dims(x: torch.Tensor, dim: Any) -> list[int]:
    return list(range(x.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)


def _mask_reduce(x: torch.Tensor, dim: Any, keepdim: bool, reduce: Any) -> Any:
    """reduce (amax: any, amin: all) of (x != 0) as 1.0 / 0.0 in fp16, then > 0 (float, int and
    bool x; the ``.all_out`` / ``.out`` overloads run this and copy)."""
    if x.dtype not in _CARD_DTYPES:
        return NotImplemented
    return aten.gt.Scalar(reduce(_nonzero_ones(x), _reduced_dims(x, dim), keepdim), 0)


@_register(aten.any.default, aten.any.dims, aten.any.dim)
def _any(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """Some element is nonzero."""
    return _mask_reduce(x, dim, keepdim, aten.amax.default)


@_register(aten.all.default, aten.all.dims, aten.all.dim)
def _all(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """Every element is nonzero."""
    return _mask_reduce(x, dim, keepdim, aten.amin.default)


# torch.isin as compares: each element against every test value (an [.., K] block of eq), any
# over K. Costs elements.numel() * K compares: past this it is left to the CPU.
_ISIN_LIMIT = 1 << 24


@_register(aten.isin.Tensor_Tensor)
def _isin(elements: torch.Tensor, test_elements: torch.Tensor, assume_unique: bool = False,
          invert: bool = False) -> Any:
    """elements in test_elements (generate()'s EOS check: the last tokens against the EOS ids):
    eq(elements[.., None], test.flatten()) reduced by any over the test values."""
    k = test_elements.numel()
    if elements.numel() == 0 or k == 0 or elements.numel() * k > _ISIN_LIMIT or \
            elements.dtype not in _CARD_DTYPES or test_elements.dtype not in _CARD_DTYPES:
        return NotImplemented
    hit = aten.eq.Tensor(aten.unsqueeze.default(elements, -1), aten.reshape.default(test_elements, [k]))
    found = _any(hit, -1, False)
    return aten.eq.Scalar(found, 0) if invert else found


@_register(aten.isin.Tensor_Scalar)
def _isin_scalar(elements: torch.Tensor, test_element: Any, assume_unique: bool = False,
                 invert: bool = False) -> Any:
    return (aten.ne.Scalar if invert else aten.eq.Scalar)(elements, test_element)


# pow with a tensor exponent as exp(y * log x), in fp32 (fp16 / bf16 operands are widened and the
# result narrowed back): a negative base keeps its sign rule (an integral exponent takes |x|, an
# odd one negates; a fractional one gives log's NaN, as torch), a zero exponent gives 1.
def _pow_exp_log(x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    xf = x if x.dtype == torch.float32 else aten._to_copy.default(x, dtype=torch.float32)
    yf = y if y.dtype == torch.float32 else aten._to_copy.default(y, dtype=torch.float32)
    whole = aten.eq.Tensor(aten.floor.default(yf), yf)
    base = aten.where.self(whole, aten.abs.default(xf), xf)
    r = aten.exp.default(aten.mul.Tensor(yf, aten.log.default(base)))
    half = aten.mul.Tensor(yf, 0.5)
    odd = aten.ne.Tensor(aten.floor.default(half), half)
    negate = aten.bitwise_and.Tensor(aten.bitwise_and.Tensor(aten.lt.Scalar(xf, 0), whole), odd)
    r = aten.where.self(negate, aten.neg.default(r), r)
    r = aten.where.ScalarSelf(aten.eq.Scalar(yf, 0), 1.0, r)
    return r if dtype == torch.float32 else aten._to_copy.default(r, dtype=dtype)


@_register(aten.pow.Tensor_Tensor)
def _pow_tensor(x: torch.Tensor, y: torch.Tensor) -> Any:
    dtype = torch.result_type(x, y)
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return NotImplemented  # integer pow: not on the card
    return _pow_exp_log(x, y, dtype)


@_register(aten.pow.Scalar)
def _pow_scalar_base(base: Any, y: torch.Tensor) -> Any:
    """base ** y (ALiBi slopes, RoPE frequencies): exp(y * log(base)) for a number base > 0."""
    dtype = torch.result_type(base, y)
    if isinstance(base, complex) or not dtype.is_floating_point or not base > 0:
        return NotImplemented
    yf = y if y.dtype == torch.float32 else aten._to_copy.default(y, dtype=torch.float32)
    r = aten.exp.default(aten.mul.Tensor(yf, math.log(base)))
    return r if dtype == torch.float32 else aten._to_copy.default(r, dtype=dtype)


# logical_and / or / xor: both operands as bool masks (x != 0), then min / max / ne of the masks.
@_register(aten.logical_and.default)
def _logical_and(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return aten.minimum.default(_as_mask(x), _as_mask(y))


@_register(aten.logical_or.default)
def _logical_or(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return aten.maximum.default(_as_mask(x), _as_mask(y))


@_register(aten.logical_xor.default)
def _logical_xor(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return aten.ne.Tensor(_as_mask(x), _as_mask(y))


def _as_mask(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype == torch.bool else aten.ne.Scalar(x, 0)
