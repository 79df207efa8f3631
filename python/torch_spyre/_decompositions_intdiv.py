"""Integer floor division and remainder on the card, exact for every int32 operand (registered
into ``_decompositions.DECOMPOSITIONS`` on import; eager kernels and compiled graphs alike):
``floor_divide`` / ``//`` and ``remainder`` / ``%`` of int32 / int64 tensors (int64 is int32 on
the card) by a tensor or a Python int, with torch's semantics: the quotient rounded toward
-inf, the remainder taking the divisor's sign, ``INT_MIN // -1`` wrapping to INT_MIN.

The card's integer ALU adds, subtracts, multiplies (wrapping) and compares; it has no divide.
The quotient starts as ``floor(a / b)`` in fp32 (|error| up to ~|a/b| 2^-22 + 1), is refined
twice by ``q += floor((a - q b) / b)`` with the remainder in wrapping int32 (it is small once q
is close, so the second estimate is off by at most one), then set exactly by compares:
``q -= 1`` where the remainder has the wrong sign, ``q += 1`` where it is as large as b.

A zero divisor: torch raises ``RuntimeError: ZeroDivisionError``. A Python 0 raises it here,
while the graph is built; a zero element of a divisor tensor is found on the card, by the
bounds-checked gather of ``_index_check`` (index ``b == 0`` against a one-row table), and fails
the launch with the device's wording: ``… index 1 (entry e of the index list) is outside the
table's rows [0, 1)``, e the flat position of the zero.
"""

from __future__ import annotations

from typing import Any

import torch

from ._decompositions import _register
from ._index_check import checked_index

aten = torch.ops.aten

_INTS = (torch.int32, torch.int64)


def _int_operands(x: Any, other: Any) -> bool:
    """An int32/int64 tensor divided by an int32/int64 tensor or a Python int."""
    if not isinstance(x, torch.Tensor) or x.dtype not in _INTS:
        return False
    if isinstance(other, torch.Tensor):
        return other.dtype in _INTS
    return isinstance(other, int) and not isinstance(other, bool)


def _i32(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype == torch.int32 else aten._to_copy.default(x, dtype=torch.int32)


def _f32(x: torch.Tensor) -> torch.Tensor:
    return aten._to_copy.default(x, dtype=torch.float32)


def _floor_div_i32(a: torch.Tensor, b: Any) -> torch.Tensor:
    """a // b in int32 (a an int32 tensor, b an int32 tensor without zeros or a nonzero int)."""
    tensor = isinstance(b, torch.Tensor)
    bf = _f32(b) if tensor else float(b)
    mul, div = aten.mul.Tensor, aten.div.Tensor

    def estimate(v: torch.Tensor) -> torch.Tensor:
        return aten._to_copy.default(aten.floor.default(div(_f32(v), bf)), dtype=torch.int32)

    q = estimate(a)
    for _ in range(2):
        q = aten.add.Tensor(q, estimate(aten.sub.Tensor(a, mul(q, b))))
    # exact: the remainder r = a - q b must lie in [0, b) (b > 0) or (b, 0] (b < 0)
    r = aten.sub.Tensor(a, mul(q, b))
    if tensor:
        pos = aten.gt.Scalar(b, 0)
        low = aten.where.self(pos, aten.lt.Scalar(r, 0), aten.gt.Scalar(r, 0))
        high = aten.where.self(pos, aten.ge.Tensor(r, b), aten.le.Tensor(r, b))
    elif b > 0:
        low, high = aten.lt.Scalar(r, 0), aten.ge.Scalar(r, b)
    else:
        low, high = aten.gt.Scalar(r, 0), aten.le.Scalar(r, b)
    q = aten.where.self(low, aten.sub.Tensor(q, 1), q)
    return aten.where.self(high, aten.add.Tensor(q, 1), q)


def _nonzero_divisor(b: Any) -> Any:
    """b (an int tensor) with a device fault where it is 0 (see the module's note); a Python 0
    raises torch's error now."""
    if not isinstance(b, torch.Tensor):
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        return b
    b = _i32(b)
    zero = aten.where.ScalarOther(aten.eq.Scalar(b, 0), aten.full_like.default(b, 1), 0)
    return aten.add.Tensor(b, checked_index(zero, 1))  # + 0 once checked: the check stays in the graph


def _result(q: torch.Tensor, x: torch.Tensor, other: Any) -> torch.Tensor:
    dtype = torch.result_type(x, other)
    return q if dtype == torch.int32 else aten._to_copy.default(q, dtype=dtype)


@_register(aten.floor_divide.default, aten.floor_divide.Scalar)
def int_floor_divide(x: torch.Tensor, other: Any) -> Any:
    """Integer x // other, exact (see the module's note); floats are left to other kernels."""
    if not _int_operands(x, other):
        return NotImplemented
    b = _nonzero_divisor(other)
    return _result(_floor_div_i32(_i32(x), b), x, other)


@_register(aten.remainder.Tensor, aten.remainder.Scalar)
def _remainder(x: torch.Tensor, other: Any) -> Any:
    """Integer x % other = x - (x // other) other, exact, with the divisor's sign (torch's
    remainder); floats are left to other kernels."""
    if not _int_operands(x, other):
        return NotImplemented
    b = _nonzero_divisor(other)
    a = _i32(x)
    return _result(aten.sub.Tensor(a, aten.mul.Tensor(_floor_div_i32(a, b), b)), x, other)
