"""Decompositions of the norms the card has no kernel for (registered into
``_decompositions.DECOMPOSITIONS`` on import; compiled graphs and eager kernels alike): group
norm (wav2vec2's feature extractor, UNets), ``linalg.vector_norm`` (CLIP-style embedding
normalisation), inference batch norm (ResNet) and weight norm (wav2vec2's positional
convolution), as reductions and pointwise ops the card runs.
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


def _reduce(op: str, x: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    """amax / amin / sum over dims, one dim at a time from the innermost (a reduction over
    several dims of a large tensor, e.g. a conv weight's norm over its [C_out, C_in] dims, has
    rows that do not fit LX as one reduction)."""
    for d in sorted(dims, reverse=True):
        x = aten.sum.dim_IntList(x, [d], True) if op == "sum" else getattr(aten, op).default(x, [d], True)
    return x if keepdim else aten.squeeze.dims(x, dims)


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
        return _reduce("amax", a, dims, keepdim)
    if p == -math.inf:
        return _reduce("amin", a, dims, keepdim)
    if p == 0:
        nz = aten.where.ScalarOther(aten.ne.Scalar(x, 0), aten.full_like.default(x, 1.0), 0.0)
        return _reduce("sum", nz, dims, keepdim)
    if p == 1:
        return _reduce("sum", a, dims, keepdim)
    m = _reduce("amax", a, dims, True)
    m = aten.where.self(aten.eq.Scalar(m, 0), aten.full_like.default(m, 1.0), m)
    scaled = aten.div.Tensor(a, m)
    powered = aten.mul.Tensor(scaled, scaled) if p == 2 else aten.pow.Tensor_Scalar(scaled, p)
    s = _reduce("sum", powered, dims, True)
    root = aten.sqrt.default(s) if p == 2 else aten.pow.Tensor_Scalar(s, 1.0 / p)
    out = aten.mul.Tensor(m, root)
    return out if keepdim else aten.squeeze.dims(out, dims)


def _per_channel(t: torch.Tensor, rank: int) -> torch.Tensor:
    return aten.view.default(t, [1, t.shape[0]] + [1] * (rank - 2))


def _batch_norm_inference(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                          running_mean: torch.Tensor, running_var: torch.Tensor, eps: float) -> torch.Tensor:
    """(x - running_mean) * rsqrt(running_var + eps) * weight + bias, per channel (dim 1), in
    x's dtype: the statistics are cast to it first, as torch does for fp16 activations."""
    r = x.dim()
    mean = aten._to_copy.default(running_mean, dtype=x.dtype) if running_mean.dtype != x.dtype else running_mean
    var = aten._to_copy.default(running_var, dtype=x.dtype) if running_var.dtype != x.dtype else running_var
    out = aten.mul.Tensor(aten.sub.Tensor(x, _per_channel(mean, r)),
                          _per_channel(aten.rsqrt.default(aten.add.Tensor(var, eps)), r))
    if weight is not None:
        out = aten.mul.Tensor(out, _per_channel(weight, r))
    if bias is not None:
        out = aten.add.Tensor(out, _per_channel(bias, r))
    return out


def _batch_norm_ok(x: torch.Tensor, running_mean: Any, running_var: Any) -> bool:
    return (x.dtype in _FLOATS and x.dim() >= 2 and x.numel() > 0 and isinstance(running_mean, torch.Tensor)
            and isinstance(running_var, torch.Tensor) and tuple(running_mean.shape) == (x.shape[1],))


def _no_stats(x: torch.Tensor) -> torch.Tensor:
    """The saved mean / invstd outputs of inference batch norm: empty, as torch returns them."""
    return aten.empty.memory_format([0], dtype=x.dtype, device=x.device)


@_register(aten._native_batch_norm_legit_no_training.default)
def _batch_norm_no_training(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                            running_mean: torch.Tensor, running_var: torch.Tensor, momentum: float,
                            eps: float) -> Any:
    """Inference batch norm (ResNet, ConvNeXt-style stems exported or compiled in eval mode)."""
    if not _batch_norm_ok(x, running_mean, running_var):
        return NotImplemented
    return _batch_norm_inference(x, weight, bias, running_mean, running_var, eps), _no_stats(x), _no_stats(x)


@_register(aten.native_batch_norm.default)
def _native_batch_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                       running_mean: torch.Tensor | None, running_var: torch.Tensor | None, training: bool,
                       momentum: float, eps: float) -> Any:
    """Eval-mode batch norm; training mode (batch statistics, running-stat updates) is not ours."""
    if training or not _batch_norm_ok(x, running_mean, running_var):
        return NotImplemented
    return _batch_norm_inference(x, weight, bias, running_mean, running_var, eps), _no_stats(x), _no_stats(x)


@_register(aten._weight_norm_interface.default)
def _weight_norm(v: torch.Tensor, g: torch.Tensor, dim: int = 0) -> Any:
    """weight_norm's w = g * v / ||v|| with the 2-norm over every dim but `dim` (wav2vec2's
    positional convolution); returns (w, norm) as torch does, the norm keeping v's rank."""
    if v.dtype not in _FLOATS or v.dim() == 0 or v.numel() == 0:
        return NotImplemented
    d = dim % v.dim()
    others = [k for k in range(v.dim()) if k != d]
    norm = _vector_norm(v, 2, others, True) if others else aten.abs.default(v)
    return aten.mul.Tensor(v, aten.div.Tensor(g, norm)), norm
