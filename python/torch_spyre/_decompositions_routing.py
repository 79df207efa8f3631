"""Mixture-of-experts routing as static card work (issue 18): ``topk``, ``sort``, ``histc``,
``one_hot``, ``index_add``, ``scatter_add`` (eager and compiled) and,
compiled only, 1-d / rank >= 3 ``x[idx]``, 1-d ``x[idx] = v``, grouped matmuls, a small
``empty_like`` and ``alias``, decomposed into ops the card runs (compares, ``where``,
reductions, ``arange``, row gathers and scatters, mm/bmm).

Every output shape here is static: routing is dense and masked, never a data-dependent shape.
Sizes are bounded (a decomposition returns NotImplemented past its bound, and the op goes to
the CPU, or raises under SPYRE_STRICT=1): ``topk`` costs k rounds over the tensor, ``sort`` and
``histc`` an [n, n] / [N, bins] compare block per row (grouped matmuls:
``_decompositions_grouped_mm.py``). transformers' MoE experts (``grouped_mm`` implementation, its default) reach the card
as: topk over the router logits, a stable sort of the expert ids, ``perm // top_k``, gathers by
the permutation, histc + cumsum for the group offsets, two grouped matmuls and the inverse
permutation written by a scatter.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ._decompositions_index import advanced_index
from ._index_check import checked_index, wrapped_index
from ._registry import registrar

aten = torch.ops.aten

__all__ = ["ROUTING_DECOMPOSITIONS", "ROUTING_COMPILE_DECOMPOSITIONS", "routing_compile_decompositions"]

ROUTING_DECOMPOSITIONS: dict[Any, Callable] = {}
ROUTING_COMPILE_DECOMPOSITIONS: dict[Any, Callable] = {}
_register = registrar(ROUTING_DECOMPOSITIONS)
_register_compile = registrar(ROUTING_COMPILE_DECOMPOSITIONS)

#: largest k of topk (k rounds of a max and a first-index search over the whole tensor)
TOPK_MAX_K = 16
#: largest compare block (elements) of sort ([.., n, n]) and histc ([N, bins])
BLOCK_LIMIT = 1 << 24
#: largest bins of histc (one where per bin builds the edge tensors)
HISTC_MAX_BINS = 256

_INTS = (torch.int32, torch.int64)


def _sortable(x: torch.Tensor) -> bool:
    return x.dim() > 0 and x.numel() > 0 and (x.is_floating_point() or x.dtype in _INTS)


def _positions(n: int, d: int, rank: int, device: torch.device) -> torch.Tensor:
    """arange(n) as int32, shaped to broadcast along dim d of a rank-``rank`` tensor."""
    shape = [1] * rank
    shape[d] = n
    return aten.view.default(aten.arange.default(n, dtype=torch.int32, device=device), shape)


def _select_at(x: torch.Tensor, ar: torch.Tensor, pos: torch.Tensor, d: int) -> torch.Tensor:
    """x at position pos along d (pos has size 1 there): the one selected element plus zeros,
    exact in every dtype (where, not a product, so inf and NaN pass unchanged)."""
    return aten.sum.dim_IntList(aten.where.ScalarOther(aten.eq.Tensor(ar, pos), x, 0), [d], True)


@_register(aten.topk.default)
def _topk(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """k rounds over dim: the max (min) of the elements not yet taken, the first position
    holding it (equal values: the lowest index first, the order of torch's stable sort; torch's
    CPU topk leaves it unspecified), its value by a one-hot select. NaN
    counts as larger than every number (torch's order): taken first when largest, last when
    smallest. Results are always sorted (torch leaves the order of sorted=False unspecified).
    Indices are int64 (int32 on the card)."""
    if not _sortable(x) or not 0 < k <= TOPK_MAX_K:
        return NotImplemented
    d = dim % x.dim()
    n = x.shape[d]
    if k > n:
        return NotImplemented  # torch's error, from its own kernel
    floating = x.is_floating_point()
    extreme = aten.amax.default if largest else aten.amin.default
    if floating:
        fill = float("-inf") if largest else float("inf")
    else:
        info = torch.iinfo(torch.int32)
        fill = info.min if largest else info.max
    ar = _positions(n, d, x.dim(), x.device)
    nan = aten.ne.Tensor(x, x) if floating else None
    key = aten.where.self(nan, aten.full_like.default(x, fill), x) if floating else x
    outk = _positions(k, d, x.dim(), x.device)
    taken = None  # int32, 1 at the positions already taken
    values = indices = None
    for r in range(k):
        tk = None if taken is None else aten.ne.Scalar(taken, 0)
        free = key if tk is None else aten.where.self(tk, aten.full_like.default(key, fill), key)
        m = extreme(free, [d], True)

        def first(hit: torch.Tensor) -> torch.Tensor:
            cand = aten.where.ScalarOther(hit, ar, n)
            if tk is not None:
                cand = aten.where.ScalarSelf(tk, n, cand)
            return aten.amin.default(cand, [d], True)

        pos = first(aten.eq.Tensor(free, m))
        if floating:
            pos_nan = first(nan)
            if largest:  # a NaN not yet taken comes first
                pos = aten.where.self(aten.lt.Scalar(pos_nan, n), pos_nan, pos)
            else:  # a NaN comes once no number is left
                pos = aten.where.self(aten.lt.Scalar(pos, n), pos, pos_nan)
        val = _select_at(x, ar, pos, d)
        if val.dtype != x.dtype:
            val = aten._to_copy.default(val, dtype=x.dtype)
        here = aten.eq.Scalar(outk, r)
        values = aten.where.self(here, val, aten.zeros_like.default(val)) if values is None else \
            aten.where.self(here, val, values)
        indices = aten.where.ScalarOther(here, pos, 0) if indices is None else aten.where.self(here, pos, indices)
        if r + 1 < k:
            hot = aten.eq.Tensor(ar, pos)
            if taken is None:
                taken = aten.full.default(list(x.shape), 0, dtype=torch.int32, device=x.device)
            taken = aten.where.ScalarSelf(hot, 1, taken)
    return values, aten._to_copy.default(indices, dtype=torch.int64)


def _last(x: torch.Tensor, d: int) -> torch.Tensor:
    return x if d == x.dim() - 1 else aten.transpose.int(x, d, x.dim() - 1)


def _ones_i32(shape: list[int], device: torch.device) -> torch.Tensor:
    return aten.full.default(shape, 1, dtype=torch.int32, device=device)


@_register(aten.sort.default)
def _sort(x: torch.Tensor, dim: int = -1, descending: bool = False) -> Any:
    return _sort_stable(x, stable=True, dim=dim, descending=descending)


@_register(aten.sort.stable)
def _sort_stable(x: torch.Tensor, *, stable: bool | None = None, dim: int = -1, descending: bool = False) -> Any:
    """A stable sort by ranks: element i goes to position #{j: x_j before x_i} where j is before
    i if its value is smaller (larger when descending), or equal with j < i; then each position
    r takes the one element of rank r (a one-hot select: exact values and indices). NaN sorts
    after every number (first when descending), as torch. torch leaves the order of equal
    elements unspecified when not stable; this order is the stable one. Costs an [.., n, n]
    compare block: past BLOCK_LIMIT elements NotImplemented."""
    if not _sortable(x) or x.numel() * x.shape[dim] > BLOCK_LIMIT:
        return NotImplemented
    d = dim % x.dim()
    n = x.shape[d]
    xt = _last(x, d)
    xj, xi = aten.unsqueeze.default(xt, -1), aten.unsqueeze.default(xt, -2)  # [.., n_j, 1], [.., 1, n_i]
    arj = aten.view.default(aten.arange.default(n, dtype=torch.int32, device=x.device), [n, 1])
    ari = aten.view.default(aten.arange.default(n, dtype=torch.int32, device=x.device), [1, n])
    ones = _ones_i32([n, n], x.device)
    tri = aten.where.ScalarOther(aten.lt.Tensor(arj, ari), ones, 0)  # j < i
    ahead = aten.gt.Tensor(xj, xi) if descending else aten.lt.Tensor(xj, xi)
    before = aten.where.ScalarSelf(ahead, 1, aten.where.ScalarOther(aten.eq.Tensor(xj, xi), tri, 0))
    if x.is_floating_point():
        nan_j, nan_i = aten.ne.Tensor(xj, xj), aten.ne.Tensor(xi, xi)
        # a NaN j is before every number i when descending, after it when ascending
        before = aten.where.ScalarSelf(nan_j, 1 if descending else 0, before)
        nan_row = aten.where.self(nan_j, tri, ones if not descending else aten.zeros_like.default(ones))
        before = aten.where.self(nan_i, nan_row, before)
    rank = aten.sum.dim_IntList(before, [-2], False, dtype=torch.int32)  # [.., n_i]
    hot = aten.eq.Tensor(aten.unsqueeze.default(rank, -1), ari)  # [.., n_i, n_r]
    values = aten.sum.dim_IntList(aten.where.ScalarOther(hot, xj, 0), [-2])
    if values.dtype != x.dtype:
        values = aten._to_copy.default(values, dtype=x.dtype)
    perm = aten.sum.dim_IntList(aten.where.ScalarOther(hot, arj, 0), [-2], False, dtype=torch.int32)
    perm = aten._to_copy.default(perm, dtype=torch.int64)
    return _last(values, d), _last(perm, d)


@_register(aten.histc.default)
def _histc(x: torch.Tensor, bins: int = 100, min: Any = 0, max: Any = 0) -> Any:
    """Counts per bin of [min, max] (both ends included; outside and NaN not counted). Floats,
    as torch's CPU kernel: bin trunc((e - min) * bins / (max - min)) in fp32 arithmetic (fp16
    and bf16 x are widened to fp32 first: torch rounds each step in x's dtype, so an element
    within an ulp of an edge may land in the neighbouring bin), max itself in the last bin.
    Integer x (no CPU kernel in torch; CUDA's rule): bin floor((e - min) * bins / (max - min))
    exactly, i.e. the exact edges rounded up. An [N, bins] one-hot block summed in int32; the
    result has x's dtype. min == max (the data's range) is NotImplemented."""
    from fractions import Fraction
    import math

    lo_v, hi_v = float(min), float(max)
    if (x.numel() == 0 or not (x.is_floating_point() or x.dtype in _INTS) or not 0 < bins <= HISTC_MAX_BINS
            or x.numel() * bins > BLOCK_LIMIT or not lo_v < hi_v or not math.isfinite(hi_v - lo_v)):
        return NotImplemented
    n = x.numel()
    arb = aten.view.default(aten.arange.default(bins, dtype=torch.int32, device=x.device), [1, bins])
    if x.is_floating_point():
        from torch.utils._python_dispatch import _disable_current_modes

        with _disable_current_modes():  # host numbers, outside the trace: min/max in x's dtype
            lo_t, hi_t = torch.tensor(lo_v, dtype=x.dtype), torch.tensor(hi_v, dtype=x.dtype)
            lo_v, hi_v, width = lo_t.item(), hi_t.item(), (hi_t - lo_t).float().item()
        col = x if x.dtype == torch.float32 else aten._to_copy.default(x, dtype=torch.float32)
        col = aten.view.default(aten.clone.default(col, memory_format=torch.contiguous_format), [n, 1])
        t = aten.div.Tensor(aten.mul.Tensor(aten.sub.Tensor(col, lo_v), float(bins)), width)
        pos = aten._to_copy.default(aten.floor.default(t), dtype=torch.int32)
        lo_ok, hi_ok = aten.ge.Scalar(col, lo_v), aten.le.Scalar(col, hi_v)
    else:
        lo_f, w = Fraction(lo_v), (Fraction(hi_v) - Fraction(lo_v)) / bins
        ceil = [math.ceil(lo_f + j * w) for j in range(bins)]
        info = torch.iinfo(torch.int32)
        top = math.floor(hi_v)
        if not (info.min <= ceil[0] and top <= info.max):
            return NotImplemented
        col = aten._to_copy.default(x, dtype=torch.int32) if x.dtype != torch.int32 else x
        col = aten.view.default(aten.clone.default(col, memory_format=torch.contiguous_format), [n, 1])
        span = hi_v - lo_v
        if lo_v.is_integer() and span.is_integer() and span < 1 << 17 and span * bins < 1 << 30:
            # integer bounds: (e - min) * bins // (max - min), exact (elements outside are masked)
            from ._decompositions_intdiv import int_floor_divide

            pos = int_floor_divide(aten.mul.Tensor(aten.sub.Tensor(col, int(lo_v)), bins), int(span))
        else:  # bin = #(edges above the first at or below e): bins - 1 compares of a [N, 1] column
            pos = aten.full.default([n, 1], 0, dtype=torch.int32, device=x.device)
            for c in ceil[1:]:
                pos = aten.add.Tensor(pos, aten.where.ScalarOther(aten.ge.Scalar(col, c), _ones_i32([n, 1], x.device), 0))
        lo_ok, hi_ok = aten.ge.Scalar(col, ceil[0]), aten.le.Scalar(col, top)
    pos = aten.where.ScalarSelf(aten.ge.Scalar(pos, bins), bins - 1, pos)  # max: the last bin
    inside = aten.where.ScalarOther(aten.eq.Tensor(pos, arb), _ones_i32([1, bins], x.device), 0)
    inside = aten.where.ScalarOther(hi_ok, aten.where.ScalarOther(lo_ok, inside, 0), 0)
    counts = aten.sum.dim_IntList(inside, [0], False, dtype=torch.int32)
    return counts if counts.dtype == x.dtype else aten._to_copy.default(counts, dtype=x.dtype)


@_register(aten.one_hot.default)
def _one_hot(x: torch.Tensor, num_classes: int = -1) -> Any:
    """eq(x[.., None], arange(C)) as int64. num_classes = -1 (C from the data's max: a
    data-dependent shape) is NotImplemented; an index outside [0, C) is a device fault
    (``checked_index``; torch raises too)."""
    if x.dtype not in _INTS or num_classes <= 0 or x.numel() * num_classes > BLOCK_LIMIT:
        return NotImplemented
    ar = aten.arange.default(num_classes, dtype=torch.int32, device=x.device)
    x = checked_index(x, num_classes)
    return aten._to_copy.default(aten.eq.Tensor(aten.unsqueeze.default(x, -1), ar), dtype=torch.int64)


@_register(aten.index_add.default)
def _index_add(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: Any = 1) -> Any:
    """x.index_add(dim, idx, src): x + alpha * (onehot @ src) with onehot[r, i] = (idx[i] == r),
    an [n, m] matrix in x's dtype: a matmul on the PT array (fp32 accumulation, one rounding per
    element; torch adds in x's dtype one source row at a time). fp16/bf16 x; an index outside
    [0, n) is a device fault (``checked_index``; torch raises too); n * m up to BLOCK_LIMIT."""
    if (x.dtype not in (torch.float16, torch.bfloat16) or source.dtype != x.dtype or index.dtype not in _INTS
            or index.dim() > 1 or x.dim() == 0 or x.numel() == 0 or index.numel() == 0):
        return NotImplemented
    d = dim % x.dim()
    n, m = x.shape[d], index.numel()
    if n * m > BLOCK_LIMIT:
        return NotImplemented
    xt = x if d == 0 else aten.movedim.int(x, d, 0)
    st = source if d == 0 else aten.movedim.int(source, d, 0)
    rest = list(xt.shape[1:])
    r = 1
    for k in rest:
        r *= k
    src = aten.view.default(aten.clone.default(st, memory_format=torch.contiguous_format), [m, r])
    rows = aten.view.default(aten.arange.default(n, dtype=torch.int32, device=x.device), [n, 1])
    hot = aten.eq.Tensor(rows, aten.view.default(checked_index(index, n), [1, m]))
    onehot = aten.where.ScalarOther(hot, aten.full.default([n, m], float(alpha), dtype=x.dtype, device=x.device), 0)
    added = aten.view.default(aten.mm.default(onehot, src), [n] + rest)
    out = aten.add.Tensor(xt, added)
    return out if d == 0 else aten.movedim.int(out, 0, d)


@_register(aten.scatter_add.default)
def _scatter_add(x: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> Any:
    """out[.., index[i], ..] += src[.., i, ..] along dim, element by element: an [.., n, m, ..]
    one-hot block (index == r) selecting src by where, summed over m (exact for integers; floats
    accumulate in fp32 with one rounding). index and src of one shape equal to x's off dim; an
    index outside [0, n) is a device fault (``checked_index``; torch raises too)."""
    if (x.dim() == 0 or index.dtype not in _INTS or src.dtype != x.dtype or tuple(index.shape) != tuple(src.shape)
            or index.dim() != x.dim() or not (x.is_floating_point() or x.dtype in _INTS) or index.numel() == 0):
        return NotImplemented
    d = dim % x.dim()
    n, m = x.shape[d], index.shape[d]
    if any(index.shape[k] != x.shape[k] for k in range(x.dim()) if k != d) or index.numel() * n > BLOCK_LIMIT:
        return NotImplemented
    shape = [1] * (x.dim() + 1)
    shape[d] = n
    rows = aten.view.default(aten.arange.default(n, dtype=torch.int32, device=x.device), shape)  # [.., n, 1, ..]
    hot = aten.eq.Tensor(aten.unsqueeze.default(checked_index(index, n), d), rows)  # [.., n, m, ..]
    picked = aten.where.ScalarOther(hot, aten.unsqueeze.default(src, d), 0)
    added = aten.sum.dim_IntList(picked, [d + 1])
    if added.dtype != x.dtype:
        added = aten._to_copy.default(added, dtype=x.dtype)
    return aten.add.Tensor(x, added)


# ---- compile-only: 1-d indexing, grouped matmuls --------------------------------------------

def _index_1d(x: Any, indices: Any, ranks: tuple[int, ...] = (1,)) -> Any:
    if (not isinstance(x, torch.Tensor) or not (x.dim() in ranks or (x.dim() >= 3 and 3 in ranks))
            or len(indices) != 1 or indices[0] is None):
        return None
    i = indices[0]
    if i.dtype not in _INTS or i.dim() not in (1, 2) or x.numel() == 0 or i.numel() == 0:
        return None
    return i


@_register_compile(aten.index.Tensor)
def _index(x: torch.Tensor, indices: list) -> Any:
    """x[idx] of a 1-d x or of x of rank >= 3: rows of x viewed as an [n, 1] / [n, R] table (the
    card's dma.gather, negative indices counted from the end, then bounds-checked on the card; transformers' batched_mm experts
    gather their [E, 2I, H] weights by expert id). Several index tensors, or one on another dim:
    one row gather of x permuted (_decompositions_index.py). Other forms: the lowering of
    index.Tensor."""
    i = _index_1d(x, indices, (1, 3))
    if i is None:
        if (len(indices) == 1 and indices[0] is not None and isinstance(x, torch.Tensor) and x.dim() == 2
                and indices[0].dim() in (1, 2)):
            return NotImplemented  # the lowering's 2-d row gather
        return advanced_index(x, indices)
    rest = list(x.shape[1:])
    r = 1
    for k in rest:
        r *= k
    table = x if x.is_contiguous() else aten.clone.default(x, memory_format=torch.contiguous_format)
    table = aten.view.default(table, [x.shape[0], r])
    rows = aten.embedding.default(table, wrapped_index(i, x.shape[0]))
    return aten.view.default(rows, list(i.shape) + rest)


@_register_compile(aten.index_put.default)
def _index_put(x: torch.Tensor, indices: list, values: torch.Tensor, accumulate: bool = False) -> Any:
    """x[idx] = v of a 1-d x: rows of x viewed as [n, 1] written by the card's dma.scatter
    (index_copy; negative indices counted from the end, then bounds-checked on the card). Other forms: the index_put lowering."""
    i = _index_1d(x, indices)
    if i is None or accumulate or i.dim() != 1 or values.dtype != x.dtype or values.dim() > 1:
        return NotImplemented
    m = i.shape[0]
    if values.dim() == 0 or values.shape[0] != m:
        values = aten.expand.default(values, [m])
    src = aten.view.default(aten.clone.default(values, memory_format=torch.contiguous_format), [m, 1])
    out = aten.index_copy.default(aten.view.default(x, [x.shape[0], 1]), 0, wrapped_index(i, x.shape[0]), src)
    return aten.view.default(out, [x.shape[0]])


#: an empty_like of at most this many elements is a zero fill in compiled graphs
EMPTY_FILL_LIMIT = 1 << 16


@_register_compile(aten.empty_like.default)
def _empty_like(x: torch.Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
                pin_memory: Any = None, memory_format: Any = None) -> Any:
    """A small empty_like (the grouped_mm experts' ``inv_perm = empty_like(perm)`` before the
    scatter that fills it) as a zero fill: unspecified contents may be zeros, and a kernel keeps
    the graph in one partition, where an allocation between kernels splits it. Larger ones (KV
    caches, buffers) stay allocations."""
    if x.numel() > EMPTY_FILL_LIMIT or layout not in (None, torch.strided) or pin_memory:
        return NotImplemented
    return aten.full.default(list(x.shape), 0, dtype=dtype or x.dtype, device=device or x.device)


@_register_compile(aten.alias.default)
def _alias(x: torch.Tensor) -> Any:
    """alias (``x.to(x.dtype)`` in the grouped_mm experts, inside a functional graph) as a view
    of the same shape, which compiled graphs lower (a view op between kernels splits the graph)."""
    return aten.view.default(x, list(x.shape)) if x.dim() > 0 else NotImplemented


def routing_compile_decompositions() -> dict[Any, Callable]:
    """The compile-only table, with transformers' ``grouped_mm_fallback`` custom op (its MoE
    experts' grouped matmul for dtypes other than bf16) when transformers has registered it."""
    table = dict(ROUTING_COMPILE_DECOMPOSITIONS)
    from ._decompositions_grouped_mm import grouped_mm

    try:
        op = torch.ops.transformers.grouped_mm_fallback.default
    except (AttributeError, RuntimeError):
        return table
    table[op] = grouped_mm
    return table
