"""Advanced indexing by several index tensors (``x[i, j]``, ``x[:, i, j]``, ``x[i, :, j]``, a
single index tensor on any dim) as one row gather on the card (compiled graphs).

torch's semantics (``aten.index.Tensor``): the index tensors broadcast to one shape B; the
result holds B's dims where the indexed dims were when those are adjacent, in front otherwise,
then the other dims in order. Here x is permuted so the indexed dims come first and viewed as
an [N, R] table (N = product of the indexed sizes, R = product of the others); the index
tensors become one flat row index (row-major over the indexed dims, negative indices counted
from the end), which the card's ``dma.gather`` (``embedding``) reads rows by. Bounds are
checked on the card as the single-index form does: every index tensor but the first through
``checked_index`` (an index of a later dim could otherwise land on a valid flat row), the first
by the gather itself (any out-of-range first index puts the flat index outside [0, N)): an
index outside its dim is a ``DeviceIndexError``, never a wrong row.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ._index_check import checked_index, wrapped_index

aten = torch.ops.aten

__all__ = ["advanced_index"]

_INTS = (torch.int32, torch.int64)


def advanced_index(x: torch.Tensor, indices: list) -> Any:
    """x[indices] for int32/int64 index tensors (None: a whole dim), or NotImplemented for the
    forms this does not take (boolean masks, empty tensors, 0-d x)."""
    pos = [k for k, t in enumerate(indices) if t is not None]
    if (not isinstance(x, torch.Tensor) or x.dim() == 0 or not pos or len(indices) > x.dim() or x.numel() == 0
            or any(indices[k].dtype not in _INTS or indices[k].numel() == 0 for k in pos)):
        return NotImplemented
    b_shape = list(torch.broadcast_shapes(*[indices[k].shape for k in pos]))
    rest = [d for d in range(x.dim()) if d not in pos]
    order = pos + rest
    xp = x if order == list(range(x.dim())) else aten.permute.default(x, order)
    xp = aten.clone.default(xp, memory_format=torch.contiguous_format)
    sizes = [x.shape[k] for k in pos]
    rest_sizes = [x.shape[d] for d in rest]
    n, r = math.prod(sizes), math.prod(rest_sizes)
    flat: Any = None
    stride = 1
    for j in reversed(range(len(pos))):
        i = wrapped_index(indices[pos[j]], sizes[j])
        if j > 0:
            i = checked_index(i, sizes[j])
        term = i if stride == 1 else aten.mul.Tensor(i, stride)
        flat = term if flat is None else aten.add.Tensor(flat, term)
        stride *= sizes[j]
    if list(flat.shape) != b_shape:
        flat = aten.expand.default(flat, b_shape)
    m = math.prod(b_shape)
    flat = aten.view.default(aten.clone.default(flat, memory_format=torch.contiguous_format), [m])
    rows = aten.embedding.default(aten.view.default(xp, [n, r]), flat)
    out = aten.view.default(rows, b_shape + rest_sizes)
    adjacent = pos == list(range(pos[0], pos[-1] + 1))
    if adjacent and pos[0] > 0:  # B's dims go where the indexed dims were
        nb, before = len(b_shape), pos[0]
        perm = list(range(nb, nb + before)) + list(range(nb)) + list(range(nb + before, out.dim()))
        out = aten.permute.default(out, perm)
    return out
