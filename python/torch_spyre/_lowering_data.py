"""Lowerings of the data-movement ATen ops: casts, transposes and permutations, slices,
cat, views and expand, select, constant padding, constant tensors, and the spyre:: layer-norm
pieces (registered into ``_lowering_core``'s table on import)."""

from __future__ import annotations

from typing import Any

import torch

from ._errors import Unsupported
from ._lowering_core import Env, Lowered, _describe, _is_operand, _reg, _scalar_value, _unary

aten = torch.ops.aten


_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
#: dtypes a cast on the card converts between (int64 lives as int32 on the card, bool as 0 / 1)
_CASTABLE = _FLOATS + (torch.int32, torch.int64, torch.bool)


@_reg(aten._to_copy.default)
def _to_copy(env: Env, b: dict) -> Lowered:
    """A dtype cast on the device: fp16/bf16 <-> fp32 (dl16tofp32 / fp32todl16), int <-> float
    (cvt: toward zero, saturating), x -> bool (x != 0), bool -> any (0 / 1)."""
    src = env.tensor(b["self"])
    if src is None:
        raise Unsupported(f"_to_copy of {_describe(env, b['self'])}")
    dev = b.get("device")
    if dev is not None and torch.device(dev).type != "spyre":
        raise Unsupported(f"_to_copy to device {dev}")
    if b.get("layout") not in (None, torch.strided) or b.get("pin_memory"):
        raise Unsupported("_to_copy with a layout or pinned memory")
    if b.get("memory_format") not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported(f"_to_copy with memory_format={b.get('memory_format')}")
    dtype = b.get("dtype") or src[1]
    if src[1] not in _CASTABLE or dtype not in _CASTABLE:
        raise Unsupported(f"_to_copy from {src[1]} to {dtype}")
    return _unary(env, "to_dtype", b["self"])


def _transpose_last_two(env: Env, x: Any, what: str) -> Lowered:
    t = env.tensor(x)
    if t is None or len(t[0]) < 2:
        raise Unsupported(f"{what} of {_describe(env, x)}")
    return _unary(env, "transpose", x)


@_reg(aten.t.default)
def _t(env: Env, b: dict) -> Lowered:
    return _transpose_last_two(env, b["self"], "t")


def _permutation(env: Env, x: Any, perm: list[int], what: str) -> Lowered:
    """The identity is a copy, a swap of the last two dims the device transpose, anything else
    the general restickify (IR permute -> ReStickifyOpHBM)."""
    t = env.tensor(x)
    if t is None:
        raise Unsupported(f"{what} of {_describe(env, x)}")
    r = len(t[0])
    if r == 0:
        return _unary(env, "clone", x)
    perm = [p % r for p in perm]
    if sorted(perm) != list(range(r)):
        raise Unsupported(f"{what} with dims {perm}")
    if perm == list(range(r)):
        return _unary(env, "clone", x)
    if perm == list(range(r - 2)) + [r - 1, r - 2]:
        return _unary(env, "transpose", x)
    return _unary(env, "permute", x, dims=perm)


@_reg(aten.transpose.int)
def _transpose(env: Env, b: dict) -> Lowered:
    t = env.tensor(b["self"])
    if t is None:
        raise Unsupported(f"transpose of {_describe(env, b['self'])}")
    r = len(t[0])
    perm = list(range(r))
    if r:
        d0, d1 = b["dim0"] % r, b["dim1"] % r
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return _permutation(env, b["self"], perm, "transpose")


@_reg(aten.permute.default)
def _permute(env: Env, b: dict) -> Lowered:
    return _permutation(env, b["self"], list(b["dims"]), "permute")


def _shape_and_dim(env: Env, x: Any, dim: int, what: str) -> tuple[tuple[int, ...], int]:
    """x's shape and `dim` wrapped into it, for ops indexing one dim of a tensor of rank >= 1."""
    t = env.tensor(x)
    if t is None or len(t[0]) == 0:
        raise Unsupported(f"{what} of {_describe(env, x)}")
    return t[0], dim % len(t[0])


@_reg(aten.slice.Tensor)
def _slice(env: Env, b: dict) -> Lowered:
    """A materialised slice of any dim; on the stick dim at any offset. A step becomes a strided
    view of the input (on the stick dim after a transpose, in the frontend's decompositions)."""
    x = b["self"]
    shape, dim = _shape_and_dim(env, x, b["dim"], "slice")
    step = b.get("step") or 1
    if step < 1:
        raise Unsupported(f"slice with step {step}")
    size = shape[dim]
    start, end = b.get("start"), b.get("end")
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    start, end = max(0, min(start, size)), max(0, min(end, size))
    if end <= start:
        raise Unsupported(f"an empty slice [{start}, {end}) of dim {dim}")
    if (start, end, step) == (0, size, 1):
        return _unary(env, "clone", x)
    return _unary(env, "slice", x, dim=dim, start=start, end=end, step=step if step != 1 else None)


@_reg(aten.cat.default)
def _cat(env: Env, b: dict) -> Lowered:
    """One copy per operand into its part of the output (empty operands are dropped)."""
    xs = list(b["tensors"])
    shapes = [env.tensor(x) for x in xs]
    if not xs or any(t is None for t in shapes) or not all(_is_operand(env, x) for x in xs):
        raise Unsupported("cat of non-tensor operands")
    rank = max(len(t[0]) for t in shapes)
    if rank == 0:
        raise Unsupported("cat of 0-d tensors")
    dim = b.get("dim", 0) % rank
    keep = [x for x, t in zip(xs, shapes) if not (len(t[0]) == 1 and t[0][0] == 0)]
    if not keep:
        raise Unsupported("cat of empty tensors")
    L = Lowered()
    if len(keep) == 1:
        L.add("clone", keep)
    else:
        L.add("cat", keep, dim=dim)
    return L


@_reg(aten.view.default)
@_reg(aten._unsafe_view.default)
@_reg(aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims)
@_reg(aten.unsqueeze.default)
def _view(env: Env, b: dict) -> Lowered:
    """A reshape in a compiled graph: a buffer copy where both generic layouts put every element
    at the same device bytes (the frontend checks), which keeps the graph in one partition."""
    t = env.tensor(b["self"])
    if t is None:
        raise Unsupported(f"view of {_describe(env, b['self'])}")
    return _unary(env, "reshape", b["self"])


@_reg(aten.expand.default)
def _expand(env: Env, b: dict) -> Lowered:
    """Materialised broadcast (the identity SuperDSC with scale -1 input dims)."""
    return _unary(env, "expand", b["self"])


@_reg(torch.ops.spyre.exx2.default)
def _exx2(env: Env, b: dict) -> Lowered:
    return _unary(env, "exx2", b["x"])


@_reg(torch.ops.spyre.layernormscale.default)
def _layernormscale(env: Env, b: dict) -> Lowered:
    return _unary(env, "layernormscale", b["stat"], eps=_scalar_value(env, b["eps"], "layernormscale eps"))


@_reg(torch.ops.spyre.layernormnorm.default)
def _layernormnorm(env: Env, b: dict) -> Lowered:
    operands = [b["x"], b["stat"], b["rstd"]]
    attrs: dict[str, Any] = {}
    for key in ("weight", "bias"):
        if b[key] is None:
            attrs[key] = 0
        else:
            operands.append(b[key])
    for o in operands:
        if not _is_operand(env, o):
            raise Unsupported(f"layernormnorm of {_describe(env, o)}")
    L = Lowered()
    L.add("layernormnorm", operands, **attrs)
    return L


@_reg(aten.select.int)
def _select(env: Env, b: dict) -> Lowered:
    """x[.., i, ..]: the frontend's decomposition makes it a slice and a squeeze (a zero-copy
    reshape, after a copy that moves the size-1 dim where the generic layouts need it)."""
    x = b["self"]
    shape, dim = _shape_and_dim(env, x, b["dim"], "select")
    index = b["index"]
    if not -shape[dim] <= index < shape[dim]:
        raise Unsupported(f"select index {index} of dim {dim} of size {shape[dim]}")
    return _unary(env, "select", x, dim=dim, index=index % shape[dim])


@_reg(aten.constant_pad_nd.default)
def _constant_pad_nd(env: Env, b: dict) -> Lowered:
    """Padding with a constant: the frontend's decomposition fills the output and copies x into
    a view of it (a cat with filled blocks along the last dim)."""
    x = b["self"]
    t = env.tensor(x)
    if t is None:
        raise Unsupported(f"constant_pad_nd of {_describe(env, x)}")
    pad = [int(p) for p in b["pad"]]
    if len(pad) % 2 or len(pad) // 2 > len(t[0]):
        raise Unsupported(f"constant_pad_nd with pad {pad} of a rank-{len(t[0])} tensor")
    if any(p < 0 for p in pad):
        raise Unsupported(f"constant_pad_nd with a negative pad {pad} (cropping)")
    value = b.get("value")
    return _unary(env, "constant_pad_nd", x, pad=pad,
                  value=0.0 if value is None else _scalar_value(env, value, "constant_pad_nd value"))


def _fill(env: Env, b: dict, value: Any) -> Lowered:
    """A constant tensor (the frontend's `full`: one fill kernel; constant dedup merges equal
    ones). Only in compiled graphs: eager factories keep their native empty + fill."""
    dev = b.get("device")
    if dev is not None and torch.device(dev).type != "spyre":
        raise Unsupported(f"a constant tensor on device {dev}")
    if b.get("layout") not in (None, torch.strided) or b.get("pin_memory"):
        raise Unsupported("a constant tensor with a layout or pinned memory")
    L = Lowered()
    L.add("full", [], value=_scalar_value(env, value, "a fill value"))
    return L


@_reg(aten.arange.default, aten.arange.start, aten.arange.start_step)
def _arange(env: Env, b: dict) -> Lowered:
    """start, start + step, ..: the frontend's `arange` (decomposed into a fill, a cumsum and an
    add, in fp32 or int32 on the card). Only in compiled graphs."""
    dev = b.get("device")
    if dev is not None and torch.device(dev).type != "spyre":
        raise Unsupported(f"arange on device {dev}")
    start = 0 if b.get("start") is None else b["start"]
    step = 1 if b.get("step") is None else b["step"]
    L = Lowered()
    L.add("arange", [], start=_scalar_value(env, start, "arange start"), step=_scalar_value(env, step, "arange step"))
    return L


@_reg(aten.full.default, aten.full_like.default)
def _full(env: Env, b: dict) -> Lowered:
    return _fill(env, b, b["fill_value"])


@_reg(aten.zeros.default, aten.zeros_like.default)
def _zeros(env: Env, b: dict) -> Lowered:
    return _fill(env, b, 0.0)


@_reg(aten.ones.default, aten.ones_like.default)
def _ones(env: Env, b: dict) -> Lowered:
    return _fill(env, b, 1.0)


_INDEX_DTYPES = (torch.int32, torch.int64)


def _wrap(L: Lowered, index: Any, dtype: torch.dtype, n: int) -> Any:
    """Negative indices counted from the end (torch's advanced indexing): where(i < 0, i + n, i);
    an index still outside [0, n) is left to the gather or scatter to fault on."""
    neg = L.add("lt", [index], scalar=0)
    L.dtypes[neg.index] = torch.bool
    w = L.add("where", [neg, L.add("add", [index], scalar=n), index])
    L.dtypes[w.index] = dtype
    return w


def _rows_of(env: Env, table: Any, index: Any, what: str, wrap: bool = False) -> Lowered:
    """table[index]: rows of a 2-d table by an int32/int64 index tensor of rank 1 or 2 (the
    frontend's ``embedding``: the card's dma.gather; an out-of-range index is a device error).
    ``wrap``: negative indices count from the end first (advanced indexing)."""
    t, i = env.tensor(table), env.tensor(index)
    if t is None or not _is_operand(env, table) or len(t[0]) != 2:
        raise Unsupported(f"{what} of {_describe(env, table)} (a 2-d table)")
    if i is None or not _is_operand(env, index) or i[1] not in _INDEX_DTYPES or len(i[0]) not in (1, 2):
        raise Unsupported(f"{what} by {_describe(env, index)}" + (f" of {i[1]}" if i else "")
                          + " (int32/int64 indices of rank 1 or 2)")
    L = Lowered()
    L.add("embedding", [table, _wrap(L, index, i[1], t[0][0]) if wrap else index])
    return L


@_reg(aten.embedding.default)
def _embedding(env: Env, b: dict) -> Lowered:
    """nn.Embedding's forward; padding_idx only matters for the gradient."""
    if b.get("sparse"):
        raise Unsupported("embedding with sparse=True")
    return _rows_of(env, b["weight"], b["indices"], "embedding")


@_reg(aten.index_select.default)
def _index_select(env: Env, b: dict) -> Lowered:
    t = env.tensor(b["self"])
    if t is None or len(t[0]) != 2 or b["dim"] % 2 != 0:
        raise Unsupported(f"index_select along dim {b['dim']} of {_describe(env, b['self'])} (dim 0 of a 2-d tensor)")
    i = env.tensor(b["index"])
    if i is not None and len(i[0]) != 1:
        raise Unsupported(f"index_select by {_describe(env, b['index'])} (a 1-d index)")
    return _rows_of(env, b["self"], b["index"], "index_select")


@_reg(aten.index.Tensor)
def _index(env: Env, b: dict) -> Lowered:
    """x[idx] with one integer index tensor on dim 0 of a 2-d x (advanced indexing: negative
    indices count from the end, as torch)."""
    indices = list(b["indices"])
    if len(indices) != 1 or indices[0] is None:
        raise Unsupported(f"index with {len(indices)} index tensors (one, on dim 0)")
    i = env.tensor(indices[0])
    if i is not None and i[1] not in _INDEX_DTYPES:
        raise Unsupported(f"index by a {i[1]} tensor (boolean masks are not supported)")
    return _rows_of(env, b["self"], indices[0], "index", wrap=True)


def _rows_into(env: Env, x: Any, dim: int, index: Any, source: Any, what: str, wrap: bool = False) -> Lowered:
    """x with source's rows written at index along dim (the frontend's ``index_copy``: the card's
    dma.scatter; an out-of-range index is a device error). dim is the second-to-last dim: the
    rows are whole last-dim sticks (a static KV cache's ``index_copy_(2, pos, k)``). ``wrap``:
    negative indices count from the end first (``index_put``; index_copy raises for them)."""
    shape, dim = _shape_and_dim(env, x, dim, what)
    if not _is_operand(env, x) or len(shape) < 2 or dim != len(shape) - 2:
        raise Unsupported(f"{what} along dim {dim} of {_describe(env, x)} (the second-to-last dim of a "
                          "tensor of rank 2 or more)")
    i = env.tensor(index)
    if i is None or not _is_operand(env, index) or i[1] not in _INDEX_DTYPES or len(i[0]) != 1:
        raise Unsupported(f"{what} by {_describe(env, index)}" + (f" of {i[1]}" if i else "")
                          + " (a 1-d int32/int64 index)")
    s = env.tensor(source)
    expect = shape[:dim] + (i[0][0],) + shape[dim + 1:]
    if s is None or not _is_operand(env, source) or tuple(s[0]) != expect or s[1] != env.tensor(x)[1]:
        raise Unsupported(f"{what} of {_describe(env, source)}" + (f" {s[1]}" if s else "")
                          + f" (a {env.tensor(x)[1]} source of shape {expect})")
    L = Lowered()
    L.add("index_copy", [x, _wrap(L, index, i[1], shape[dim]) if wrap else index, source])
    return L


@_reg(aten.index_copy.default)
def _index_copy(env: Env, b: dict) -> Lowered:
    """x.index_copy(dim, index, source) (also the functional form of ``index_copy_``)."""
    return _rows_into(env, b["self"], b["dim"], b["index"], b["source"], "index_copy")


@_reg(aten.index_put.default, aten._index_put_impl.default)
def _index_put(env: Env, b: dict) -> Lowered:
    """x[.., idx] = v with one integer index tensor (on the second-to-last dim) after full slices
    (None in the index list): transformers' StaticCache update ``cache[:, :, pos] = k`` (eager
    setitem reaches ``_index_put_impl_``, whose functional form is this one)."""
    if b.get("accumulate"):
        raise Unsupported("index_put with accumulate=True")
    indices = list(b["indices"])
    tensors = [k for k, t in enumerate(indices) if t is not None]
    if len(tensors) != 1 or tensors[0] != len(indices) - 1:
        raise Unsupported(f"index_put with index tensors at positions {tensors} of {len(indices)} (one, the last)")
    d = tensors[0]
    i = env.tensor(indices[d])
    if i is not None and i[1] not in _INDEX_DTYPES:
        raise Unsupported(f"index_put by a {i[1]} tensor (boolean masks are not supported)")
    return _rows_into(env, b["self"], d, indices[d], b["values"], "index_put", wrap=True)
