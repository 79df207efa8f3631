"""Decompositions applied while aot_autograd traces a graph for spyre (and by eager kernels of
the same ops), so composite ops reach the partitioner as primitives of the graph IR contract.

Like torch-spyre (``enable_spyre_context`` maps fp16 -> fp16 as computation dtype), these keep
the input dtype: torch's own decompositions of softmax and layer_norm upcast fp16 to fp32, which
would add dtype conversions that the card cannot run. gelu, silu and softplus are primitives of
the contract and are deliberately *not* decomposed.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

aten = torch.ops.aten

__all__ = ["spyre_decompositions", "DECOMPOSITIONS"]

DECOMPOSITIONS: dict[Any, Callable] = {}


def _register(*ops: Any) -> Callable:
    def deco(fn: Callable) -> Callable:
        for op in ops:
            DECOMPOSITIONS[op] = fn
        return fn

    return deco


def _norm_dims(x: torch.Tensor, n: int) -> list[int]:
    return list(range(x.dim() - n, x.dim()))


@_register(aten._softmax.default)
def _softmax(x: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
    m = aten.amax.default(x, [dim], True)
    e = aten.exp.default(aten.sub.Tensor(x, m))
    out = aten.div.Tensor(e, aten.sum.dim_IntList(e, [dim], True))
    return aten._to_copy.default(out, dtype=torch.float32) if half_to_float else out


@_register(aten._log_softmax.default)
def _log_softmax(x: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
    shifted = aten.sub.Tensor(x, aten.amax.default(x, [dim], True))
    lse = aten.log.default(aten.sum.dim_IntList(aten.exp.default(shifted), [dim], True))
    out = aten.sub.Tensor(shifted, lse)
    return aten._to_copy.default(out, dtype=torch.float32) if half_to_float else out


@_register(aten.native_layer_norm.default)
def _native_layer_norm(x: torch.Tensor, normalized_shape: Sequence[int], weight: torch.Tensor | None,
                       bias: torch.Tensor | None, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dims = _norm_dims(x, len(normalized_shape))
    mean = aten.mean.dim(x, dims, True)
    xc = aten.sub.Tensor(x, mean)
    var = aten.mean.dim(aten.mul.Tensor(xc, xc), dims, True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    out = aten.mul.Tensor(xc, rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    return out, mean, rstd


def _rms(x: torch.Tensor, normalized_shape: Sequence[int], weight: torch.Tensor | None,
         eps: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    dims = _norm_dims(x, len(normalized_shape))
    rstd = aten.rsqrt.default(aten.add.Tensor(aten.mean.dim(aten.mul.Tensor(x, x), dims, True), eps))
    out = aten.mul.Tensor(x, rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    return out, rstd


@_register(aten.rms_norm.default)
def _rms_norm(x: torch.Tensor, normalized_shape: Sequence[int], weight: torch.Tensor | None = None,
              eps: float | None = None) -> torch.Tensor:
    return _rms(x, normalized_shape, weight, eps)[0]


if hasattr(aten, "_fused_rms_norm"):

    @_register(aten._fused_rms_norm.default)
    def _fused_rms_norm(x: torch.Tensor, normalized_shape: Sequence[int], weight: torch.Tensor | None = None,
                        eps: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return _rms(x, normalized_shape, weight, eps)


@_register(aten.addmm.default)
def _addmm(bias: torch.Tensor, m1: torch.Tensor, m2: torch.Tensor, *, beta: float = 1,
           alpha: float = 1) -> torch.Tensor:
    out = aten.mm.default(m1, m2)
    if alpha != 1:
        out = aten.mul.Tensor(out, alpha)
    if beta == 0:
        return out
    return aten.add.Tensor(out, bias if beta == 1 else aten.mul.Tensor(bias, beta))


@_register(aten.baddbmm.default)
def _baddbmm(bias: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, *, beta: float = 1,
             alpha: float = 1) -> torch.Tensor:
    out = aten.bmm.default(b1, b2)
    if alpha != 1:
        out = aten.mul.Tensor(out, alpha)
    if beta == 0:
        return out
    return aten.add.Tensor(out, bias if beta == 1 else aten.mul.Tensor(bias, beta))


def spyre_decompositions() -> dict[Any, Callable]:
    """The table given to aot_autograd (and used by the eager kernels of these ops)."""
    return dict(DECOMPOSITIONS)
