"""Decompositions applied while aot_autograd traces a graph for spyre (and by eager kernels of
the same ops), so composite ops reach the partitioner as primitives of the graph IR contract.

Like torch-spyre (``enable_spyre_context`` maps fp16 -> fp16 as computation dtype), these keep
the input dtype: torch's own decompositions of softmax and layer_norm upcast fp16 to fp32, which
would add dtype conversions that the card cannot run. gelu, silu and softplus are primitives of
the contract and are deliberately *not* decomposed.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import torch

from ._index_check import checked_index
from ._registry import registrar

aten = torch.ops.aten

__all__ = ["spyre_decompositions", "DECOMPOSITIONS", "exx2", "layernormscale", "layernormnorm", "sdpa_math",
           "substitute_sdpa"]

DECOMPOSITIONS: dict[Any, Callable] = {}
_TORCH_SDPA = torch.nn.functional.scaled_dot_product_attention
_register = registrar(DECOMPOSITIONS)


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


# torch-spyre's layer norm ops (notes: layer_norm -> exx2 + layernormscale + layernormnorm). The
# statistics are fp32 whatever x is: E[x] and E[x^2] accumulate in fp32 on the card, so the
# variance E[x^2] - E[x]^2 keeps its precision for inputs whose mean is large next to their
# spread. The bodies below are the CPU reference (CPU fallback, fake tensors).


@torch.library.custom_op("spyre::exx2", mutates_args=())
def exx2(x: torch.Tensor) -> torch.Tensor:
    """Per row of the last dim: [E[x], E[x^2]] as fp32 (the EXX2 statistic)."""
    xf = x.float()
    return torch.stack([xf.mean(-1), (xf * xf).mean(-1)], -1)


@exx2.register_fake
def _exx2_fake(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], 2), dtype=torch.float32)


@torch.library.custom_op("spyre::layernormscale", mutates_args=())
def layernormscale(stat: torch.Tensor, eps: float) -> torch.Tensor:
    """rsqrt(max(E[x^2] - E[x]^2, 0) + eps) per row, fp32 [.., 1]."""
    var = (stat[..., 1:2] - stat[..., 0:1] * stat[..., 0:1]).clamp_min(0)
    return torch.rsqrt(var + eps)


@layernormscale.register_fake
def _layernormscale_fake(stat: torch.Tensor, eps: float) -> torch.Tensor:
    return stat.new_empty((*stat.shape[:-1], 1), dtype=torch.float32)


@torch.library.custom_op("spyre::layernormnorm", mutates_args=())
def layernormnorm(x: torch.Tensor, stat: torch.Tensor, rstd: torch.Tensor, weight: torch.Tensor | None,
                  bias: torch.Tensor | None) -> torch.Tensor:
    """(x - E[x]) * rstd * weight + bias in fp32, rounded once to x's dtype."""
    y = (x.float() - stat[..., 0:1]) * rstd
    if weight is not None:
        y = y * weight.float()
    if bias is not None:
        y = y + bias.float()
    return y.to(x.dtype)


@layernormnorm.register_fake
def _layernormnorm_fake(x: torch.Tensor, stat: torch.Tensor, rstd: torch.Tensor, weight: torch.Tensor | None,
                        bias: torch.Tensor | None) -> torch.Tensor:
    return torch.empty_like(x)


_LN_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _card_layer_norm(x: torch.Tensor, normalized_shape: Sequence[int], weight: torch.Tensor | None,
                     bias: torch.Tensor | None) -> bool:
    """The shapes the card's exx2 / layernormscale / layernormnorm take: the last dim only,
    rank 1-4, float x, [C] weight and bias of x's dtype."""
    if len(normalized_shape) != 1 or not 1 <= x.dim() <= 4 or x.dtype not in _LN_DTYPES or x.shape[-1] == 0:
        return False
    return all(p is None or (tuple(p.shape) == (x.shape[-1],) and p.dtype == x.dtype) for p in (weight, bias))


@_register(aten.native_layer_norm.default)
def _native_layer_norm(x: torch.Tensor, normalized_shape: Sequence[int], weight: torch.Tensor | None,
                       bias: torch.Tensor | None, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dims = _norm_dims(x, len(normalized_shape))
    if _card_layer_norm(x, normalized_shape, weight, bias):
        stat = torch.ops.spyre.exx2.default(x)
        rstd = torch.ops.spyre.layernormscale.default(stat, eps)
        out = torch.ops.spyre.layernormnorm.default(x, stat, rstd, weight, bias)
        # native_layer_norm's mean / rstd outputs (dead in inference graphs, removed there).
        return out, aten.mean.dim(x, dims, True), aten._to_copy.default(rstd, dtype=x.dtype)
    # Other shapes: primitives in x's dtype.
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


def _alpha_beta(out: torch.Tensor, bias: torch.Tensor, beta: float, alpha: float) -> torch.Tensor:
    """alpha * out + beta * bias, skipping the multiplications by 1 and the bias when beta = 0."""
    if alpha != 1:
        out = aten.mul.Tensor(out, alpha)
    if beta == 0:
        return out
    return aten.add.Tensor(out, bias if beta == 1 else aten.mul.Tensor(bias, beta))


@_register(aten.addmm.default)
def _addmm(bias: torch.Tensor, m1: torch.Tensor, m2: torch.Tensor, *, beta: float = 1,
           alpha: float = 1) -> torch.Tensor:
    return _alpha_beta(aten.mm.default(m1, m2), bias, beta, alpha)


@_register(aten.baddbmm.default)
def _baddbmm(bias: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, *, beta: float = 1,
             alpha: float = 1) -> torch.Tensor:
    return _alpha_beta(aten.bmm.default(b1, b2), bias, beta, alpha)


# Elementwise ops of the contract (issue 6: square, sign, ceil, logical_not, where with
# scalars) and common activations, as the primitives the card has: compares, where, floor,
# exp, tanh, softplus, clamp. NaN propagates as in torch (x * 0 keeps it; compares are false).


# where with a Python number as one branch: the ScalarSelf overload (torch.where would wrap the
# number in a scalar_tensor graph input).
@_register(aten.sign.default)
def _sign(x: torch.Tensor) -> torch.Tensor:
    return aten.where.ScalarSelf(x > 0, 1.0, aten.where.ScalarSelf(x < 0, -1.0, x * 0))


@_register(aten.ceil.default)
def _ceil(x: torch.Tensor) -> torch.Tensor:
    return -torch.floor(-x)


@_register(aten.trunc.default)
def _trunc(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < 0, -torch.floor(-x), torch.floor(x))


@_register(aten.logical_not.default)
def _logical_not(x: torch.Tensor) -> torch.Tensor:
    return x == 0


# T5's fp16 overflow guard: clamp(h, -v, v) with v = where(isinf(h).any(), max - 1000, max), the
# bound a 0-d tensor.
@_register(aten.isinf.default)
def _isinf(x: torch.Tensor) -> Any:
    """|x| == inf. On DL16 NaN and inf share one code (read as +inf), so a NaN of an fp16 tensor
    is inf on the card (docs/isa.md §5); fp32 keeps them apart."""
    if not x.is_floating_point():
        return NotImplemented
    return aten.eq.Scalar(aten.abs.default(x), float("inf"))


@_register(aten.where.Scalar)
def _where_scalars(cond: torch.Tensor, a: Any, b: Any) -> Any:
    """where with two numbers, (a - b) * cond + b: cond as 1.0 / 0.0 in fp16 (the stick geometry
    of a bool), then cast to torch's result dtype (fp32 for Python floats) on the card."""
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    _, dtype = elementwise_dtypes(a, b, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
    if not dtype.is_floating_point:
        return NotImplemented
    ones = aten.where.ScalarOther(cond, aten.full_like.default(cond, 1.0, dtype=torch.float16), 0.0)
    out = aten.add.Tensor(aten.mul.Tensor(ones, float(a) - float(b)), float(b))
    return out if dtype == torch.float16 else aten._to_copy.default(out, dtype=dtype)


# torch.gather as a one-hot select. BERT gathers its token_type_ids buffer by position ids
# (gather(buffer.expand(B, -1), 1, position_ids)); the card has row gathers (dma.gather) but no
# element gather, and this stays exact: each output is one selected element plus zeros.
_GATHER_ONE_HOT_LIMIT = 1 << 24


@_register(aten.gather.default)
def _gather(x: torch.Tensor, dim: int, index: torch.Tensor, sparse_grad: bool = False) -> Any:
    """out[.., s, ..] = x[.., index[.., s, ..], ..] along dim: (index == arange(n)) selects in an
    [.., n, S] block by where, summed over n. Costs index.numel() * n elements: past 2^24 it is
    left to the CPU (NotImplemented). An index outside [0, n) is a device fault
    (``checked_index``; torch raises too)."""
    if x.dim() == 0 or index.dim() != x.dim() or index.numel() == 0:
        return NotImplemented
    d = dim % x.dim()
    n = x.shape[d]
    if index.numel() * n > _GATHER_ONE_HOT_LIMIT:
        return NotImplemented
    last = x.dim() - 1
    index = checked_index(index, n)
    for k in range(x.dim()):  # torch allows index.size(k) <= x.size(k) off the gathered dim
        if k != d and index.shape[k] < x.shape[k]:
            x = aten.slice.Tensor(x, k, 0, index.shape[k])
    xt = x if d == last else aten.transpose.int(x, d, last)
    it = index if d == last else aten.transpose.int(index, d, last)
    # [.., n, S]: the reduction runs over n, off the stick dim, so the result [.., S] is in the
    # generic layout its consumers expect (a stick-dim reduction would need an int transpose).
    hot = aten.eq.Tensor(aten.unsqueeze.default(it, -2),
                         aten.unsqueeze.default(aten.arange.default(n, dtype=it.dtype, device=it.device), -1))
    picked = aten.where.ScalarOther(hot, aten.unsqueeze.default(xt, -1), 0)
    out = aten.sum.dim_IntList(picked, [-2])
    if out.dtype != x.dtype:
        out = aten._to_copy.default(out, dtype=x.dtype)
    return out if d == last else aten.transpose.int(out, d, last)


def _arg_extreme(x: torch.Tensor, dim: int | None, keepdim: bool, extreme: Any) -> Any:
    """The first index of the max (min) along dim, as torch: where(x == amax(x), arange(n), n)
    reduced by amin over int32 (int64 result). A NaN counts as the extreme (torch's rule), so a
    NaN position is picked first. dim=None is the flattened tensor: left to the CPU."""
    if dim is None or x.dim() == 0 or x.numel() == 0 or not (x.is_floating_point() or x.dtype in (
            torch.int32, torch.int64)):
        return NotImplemented
    d = dim % x.dim()
    n = x.shape[d]
    m = extreme(x, [d], True)
    shape = [1] * x.dim()
    shape[d] = n
    ar = aten.view.default(aten.arange.default(n, dtype=torch.int32, device=x.device), shape)
    pos = aten.where.ScalarOther(aten.eq.Tensor(x, m), ar, n)
    if x.is_floating_point():
        pos = aten.where.self(aten.ne.Tensor(x, x), ar, pos)
    return aten._to_copy.default(aten.amin.default(pos, [d], keepdim), dtype=torch.int64)


@_register(aten.argmax.default)
def _argmax(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    return _arg_extreme(x, dim, keepdim, aten.amax.default)


@_register(aten.max.dim)
def _max_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> Any:
    """torch.max(x, dim): (amax, argmax); NaN propagates into both as torch's."""
    idx = _arg_extreme(x, dim, keepdim, aten.amax.default)
    return NotImplemented if idx is NotImplemented else (aten.amax.default(x, [dim], keepdim), idx)


@_register(aten.min.dim)
def _min_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> Any:
    idx = _arg_extreme(x, dim, keepdim, aten.amin.default)
    return NotImplemented if idx is NotImplemented else (aten.amin.default(x, [dim], keepdim), idx)


@_register(aten.argmin.default)
def _argmin(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    return _arg_extreme(x, dim, keepdim, aten.amin.default)


@_register(aten.clamp.Tensor)
def _clamp_tensor(x: torch.Tensor, min: torch.Tensor | None = None, max: torch.Tensor | None = None) -> Any:
    """clamp with tensor bounds: maximum / minimum with the bounds in the result dtype (a 0-d
    bound does not promote x, as torch's type promotion)."""
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    _, dtype = elementwise_dtypes(x, *(b for b in (min, max) if b is not None),
                                  type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
    if not dtype.is_floating_point:
        return NotImplemented
    out = x.to(dtype) if x.dtype != dtype else x
    if min is not None:
        out = aten.maximum.default(out, min.to(dtype) if min.dtype != dtype else min)
    if max is not None:
        out = aten.minimum.default(out, max.to(dtype) if max.dtype != dtype else max)
    return out


@_register(aten.leaky_relu.default)
def _leaky_relu(x: torch.Tensor, negative_slope: float = 0.01) -> torch.Tensor:
    return torch.where(x > 0, x, x * negative_slope)


@_register(aten.elu.default)
def _elu(x: torch.Tensor, alpha: float = 1, scale: float = 1, input_scale: float = 1) -> torch.Tensor:
    neg = (torch.exp(x * input_scale if input_scale != 1 else x) - 1) * (alpha * scale)
    return torch.where(x > 0, x * scale if scale != 1 else x, neg)


@_register(aten.hardsigmoid.default)
def _hardsigmoid(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x * (1 / 6) + 0.5, 0, 1)


@_register(aten.hardswish.default)
def _hardswish(x: torch.Tensor) -> torch.Tensor:
    return x * _hardsigmoid(x)


@_register(aten.mish.default)
def _mish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.tanh(aten.softplus.default(x, 1, 20))


def _var(x: torch.Tensor, dim: Sequence[int] | int | None, correction: float | None, keepdim: bool) -> torch.Tensor:
    """mean((x - mean(x))^2) * n / (n - correction) in x's dtype (a mean, not a sum, so fp16
    does not overflow on long rows)."""
    dims = list(range(x.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    n = math.prod(x.shape[d] for d in dims) if dims else 1
    c = 1 if correction is None else correction
    d = x - aten.mean.dim(x, dims, True)
    v = aten.mean.dim(d * d, dims, keepdim)
    return v * (n / (n - c)) if n != c else v * float("inf")


@_register(aten.var.correction)
def _var_correction(x: torch.Tensor, dim: Sequence[int] | None = None, *, correction: float | None = None,
                    keepdim: bool = False) -> torch.Tensor:
    return _var(x, dim, correction, keepdim)


@_register(aten.std.correction)
def _std_correction(x: torch.Tensor, dim: Sequence[int] | None = None, *, correction: float | None = None,
                    keepdim: bool = False) -> torch.Tensor:
    return torch.sqrt(_var(x, dim, correction, keepdim))


@_register(aten.stack.default)
def _stack(tensors: Sequence[torch.Tensor], dim: int = 0) -> Any:
    """stack as a cat of the tensors unsqueezed at dim (GPT-J's rotary, mamba's scan states)."""
    if not tensors or any(t.shape != tensors[0].shape for t in tensors):
        return NotImplemented  # torch raises its own error
    d = dim % (tensors[0].dim() + 1)
    return aten.cat.default([aten.unsqueeze.default(t, d) for t in tensors], d)


# Compile-only decompositions: view ops that return several views become slices, which
# compiled graphs materialise on the card (``slice`` SuperDSCs). Eager mode keeps them views.
COMPILE_DECOMPOSITIONS: dict[Any, Callable] = {}


def _split_at(x: torch.Tensor, sizes: Sequence[int], dim: int) -> list[torch.Tensor]:
    out, start = [], 0
    for n in sizes:
        out.append(aten.slice.Tensor(x, dim, start, start + n))
        start += n
    return out


def _split(x: torch.Tensor, split_size: int, dim: int = 0) -> list[torch.Tensor]:
    size = x.shape[dim]
    sizes = [min(split_size, size - s) for s in range(0, size, split_size)] if split_size > 0 else [size]
    return _split_at(x, sizes or [0], dim)


def _split_with_sizes(x: torch.Tensor, split_sizes: Sequence[int], dim: int = 0) -> list[torch.Tensor]:
    return _split_at(x, split_sizes, dim)


def _repeat_heads(x: torch.Tensor, rep: int) -> torch.Tensor:
    """GQA: each of x's heads (dim -3) repeated ``rep`` times in place, as repeat_kv does: one
    broadcast copy over [batch x heads, rep, S, D] (rank 4 throughout, so no node of the graph
    needs the frontend's rank reduction), not a slice per head and a cat."""
    *lead, h, s, d = x.shape
    bh = math.prod(lead) * h
    return x.reshape(bh, 1, s, d).expand(bh, rep, s, d).reshape(*lead, h * rep, s, d)


def sdpa_math(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None,
              dropout_p: float = 0.0, is_causal: bool = False, *, scale: float | None = None,
              enable_gqa: bool = False) -> torch.Tensor:
    """torch-spyre's math path of scaled_dot_product_attention, in the input dtype (torch's own
    CPU math path upcasts fp16 to fp32, which the card's matmul cannot take): q and k scaled by
    sqrt(scale) each, GQA heads repeated, softmax(q k^T + mask) @ v, a causal mask being
    full(-inf).triu(1). Rows masked entirely give NaN (torch's _safe_softmax gives 0).

    The compiled path substitutes this for F.scaled_dot_product_attention in dynamo graphs (see
    ``substitute_sdpa``); dropout (training) keeps torch's implementation."""
    L, S = q.shape[-2], k.shape[-2]
    # Head dim 0: every score is an empty sum, 0, whatever the scale (torch's default 1/sqrt(0) is
    # inf, and its math path gives softmax(0) @ v too); any finite default gives exactly that.
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    root = math.sqrt(s)
    q, k = q * root, k * root
    if enable_gqa and k.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = _repeat_heads(k, rep), _repeat_heads(v, rep)
    attn = q @ k.transpose(-2, -1)
    if is_causal:
        attn = attn + torch.full((L, S), float("-inf"), dtype=q.dtype, device=q.device).triu(1)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn = attn.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn = attn + attn_mask
    return torch.softmax(attn, -1) @ v


@_register(aten._transformer_encoder_layer_fwd.default)
def _transformer_encoder_layer_fwd(src: torch.Tensor, embed_dim: int, num_heads: int, qkv_weight: torch.Tensor,
                                   qkv_bias: torch.Tensor, proj_weight: torch.Tensor, proj_bias: torch.Tensor,
                                   use_gelu: bool, norm_first: bool, eps: float, norm_weight_1: torch.Tensor,
                                   norm_bias_1: torch.Tensor, norm_weight_2: torch.Tensor, norm_bias_2: torch.Tensor,
                                   ffn_weight_1: torch.Tensor, ffn_bias_1: torch.Tensor, ffn_weight_2: torch.Tensor,
                                   ffn_bias_2: torch.Tensor, mask: torch.Tensor | None = None,
                                   mask_type: int | None = None) -> Any:
    """nn.TransformerEncoderLayer's inference fast path (a fused CPU/CUDA kernel that torch
    picks for any PrivateUse1 device too) as the ops it fuses: self-attention through
    ``sdpa_math``, the feed-forward block, post- or pre-norm. Masked calls keep torch's kernel."""
    if mask is not None or src.dim() != 3:
        return NotImplemented
    F = torch.nn.functional
    hd = embed_dim // num_heads

    def attention(x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = F.linear(x, qkv_weight, qkv_bias).split(embed_dim, dim=-1)
        q, k, v = (y.reshape(b, t, num_heads, hd).transpose(1, 2) for y in (q, k, v))
        a = sdpa_math(q, k, v).transpose(1, 2).reshape(b, t, embed_dim)
        return F.linear(a, proj_weight, proj_bias)

    def feed_forward(x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, ffn_weight_1, ffn_bias_1)
        return F.linear(F.gelu(h) if use_gelu else F.relu(h), ffn_weight_2, ffn_bias_2)

    def norm1(x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm2(x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    if norm_first:
        x = src + attention(norm1(src))
        return x + feed_forward(norm2(x))
    x = norm1(src + attention(src))
    return norm2(x + feed_forward(x))


_TORCH_MHA_FORWARD = torch.nn.functional.multi_head_attention_forward


def _sdpa_math_unless_dropout(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None,
                              dropout_p: float = 0.0, is_causal: bool = False, **kw: Any) -> torch.Tensor:
    if dropout_p != 0.0:
        return _TORCH_SDPA(q, k, v, attn_mask, dropout_p, is_causal, **kw)
    return sdpa_math(q, k, v, attn_mask, 0.0, is_causal, **kw)


def _mha_forward_math(*args: Any, **kwargs: Any) -> Any:
    """F.multi_head_attention_forward (what nn.MultiheadAttention calls; dynamo keeps it as one
    call) with its scaled_dot_product_attention taken by ``sdpa_math`` while it is traced."""
    F = torch.nn.functional
    F.scaled_dot_product_attention = _sdpa_math_unless_dropout
    try:
        return _TORCH_MHA_FORWARD(*args, **kwargs)
    finally:
        F.scaled_dot_product_attention = _TORCH_SDPA


def substitute_sdpa(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Rewrites calls of F.scaled_dot_product_attention without dropout in a dynamo graph to
    ``sdpa_math`` (it is CompositeImplicit, so aot_autograd would otherwise take torch's fp32
    math path before any decomposition table is consulted)."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is _TORCH_MHA_FORWARD:
            node.target = _mha_forward_math
            changed = True
            continue
        if node.op != "call_function" or node.target is not torch.nn.functional.scaled_dot_product_attention:
            continue
        dropout = node.kwargs.get("dropout_p", node.args[4] if len(node.args) > 4 else 0.0)
        if isinstance(dropout, (int, float)) and dropout == 0.0:
            node.target = sdpa_math
            changed = True
    if changed:
        gm.recompile()
    return gm


COMPILE_DECOMPOSITIONS[aten.split.Tensor] = _split
COMPILE_DECOMPOSITIONS[aten.split_with_sizes.default] = _split_with_sizes

# MoE routing (topk, sort, histc, one_hot, index_add, scatter_add; compile-only: 1-d indexing, grouped mm)
from ._decompositions_routing import ROUTING_DECOMPOSITIONS, routing_compile_decompositions  # noqa: E402

DECOMPOSITIONS.update(ROUTING_DECOMPOSITIONS)


def spyre_decompositions() -> dict[Any, Callable]:
    """The table given to aot_autograd: DECOMPOSITIONS (also the eager kernels of these ops)
    plus the compile-only ones."""
    return {**DECOMPOSITIONS, **COMPILE_DECOMPOSITIONS, **routing_compile_decompositions()}


# The mask / logic / pow, convolution, integer division, norm and grouped-matmul decompositions
# register into their tables on import.
from . import (_decompositions_conv, _decompositions_grouped_mm, _decompositions_intdiv,  # noqa: E402,F401
               _decompositions_logic, _decompositions_norms)
