"""Decompositions of the norms the card has no kernel for (registered into
``_decompositions.DECOMPOSITIONS`` on import; compiled graphs and eager kernels alike): group
norm (wav2vec2's feature extractor, UNets) and ``linalg.vector_norm`` (CLIP-style embedding
normalisation, gradient-norm style reductions), as reductions and pointwise ops the card runs.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from ._decompositions import _register

aten = torch.ops.aten

_FLOATS = (torch.float16, torch.bfloat16, torch.float32)


@_register(aten.native_group_norm.default)
def _native_group_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, n: int, c: int,
                       hw: int, group: int, eps: float) -> Any:
    """x [N, C, *] in `group` groups of C / group channels: each group's mean and variance over
    its channels and positions (x viewed [N, G, C / G * HxW], reduced over the last dim), then
    (x - mean) * rstd and the per-channel affine. Returns (out, mean [N, G], rstd [N, G])."""
    if (x.dtype not in _FLOATS or x.dim() < 2 or group <= 0 or c % group != 0 or n * c * hw == 0
            or x.numel() != n * c * hw):
        return NotImplemented
    xs = x if x.is_contiguous() else aten.clone.default(x, memory_format=torch.contiguous_format)
    grouped = aten.view.default(xs, [n, group, (c // group) * hw])
    mean = aten.mean.dim(grouped, [2], True)
    xc = aten.sub.Tensor(grouped, mean)
    rstd = aten.rsqrt.default(aten.add.Tensor(aten.mean.dim(aten.mul.Tensor(xc, xc), [2], True), eps))
    out = aten.view.default(aten.mul.Tensor(xc, rstd), list(x.shape))
    per_channel = [1, c] + [1] * (x.dim() - 2)
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, per_channel))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, per_channel))
    return out, aten.view.default(mean, [n, group]), aten.view.default(rstd, [n, group])


def _dims(x: torch.Tensor, dim: Any) -> list[int]:
    if dim is None:
        return list(range(x.dim()))
    return [dim % x.dim()] if isinstance(dim, int) else [d % x.dim() for d in dim]


@_register(aten.linalg_vector_norm.default)
def _vector_norm(x: torch.Tensor, ord: float = 2, dim: Sequence[int] | int | None = None, keepdim: bool = False, *,
                 dtype: torch.dtype | None = None) -> Any:
    """The vector p-norm over dim (all dims if None). ord inf / -inf: amax / amin of |x|; 0: the
    count of nonzeros; 1: the sum of |x|; any other p: (Σ |x|^p)^(1/p) computed as
    m · (Σ (|x| / m)^p)^(1/p) with m = amax |x| (1 where 0), so |x|^p does not overflow fp16
    where the norm itself does not (torch accumulates in fp32)."""
    if dtype is not None:
        x = aten._to_copy.default(x, dtype=dtype)
    if x.dtype not in _FLOATS or x.dim() == 0 or x.numel() == 0:
        return NotImplemented
    dims = _dims(x, dim)
    p = float(ord)
    a = aten.abs.default(x)
    if p == math.inf:
        return aten.amax.default(a, dims, keepdim)
    if p == -math.inf:
        return aten.amin.default(a, dims, keepdim)
    if p == 0:
        nz = aten.where.ScalarOther(aten.ne.Scalar(x, 0), aten.full_like.default(x, 1.0), 0.0)
        return aten.sum.dim_IntList(nz, dims, keepdim)
    if p == 1:
        return aten.sum.dim_IntList(a, dims, keepdim)
    m = aten.amax.default(a, dims, True)
    m = aten.where.self(aten.eq.Scalar(m, 0), aten.full_like.default(m, 1.0), m)
    scaled = aten.div.Tensor(a, m)
    powered = aten.mul.Tensor(scaled, scaled) if p == 2 else aten.pow.Tensor_Scalar(scaled, p)
    s = aten.sum.dim_IntList(powered, dims, True)
    root = aten.sqrt.default(s) if p == 2 else aten.pow.Tensor_Scalar(s, 1.0 / p)
    out = aten.mul.Tensor(m, root)
    return out if keepdim else aten.squeeze.dims(out, dims)
