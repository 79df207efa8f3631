"""Bounds checks of index tensors on the card, for the decompositions that use indices as data
(one-hot compares, the wrap of negative indices) instead of as addresses.

A one-hot form (``one_hot``, ``index_add``, ``scatter_add``, ``gather``) compares each index
with ``arange(n)``: an index outside [0, n) would match no row and be silently ignored, where
torch raises. ``checked_index`` routes the indices through the card's ``dma.gather`` (the ISA's
bounds-checked indexed load, docs/isa.md) from the table ``arange(n)`` viewed as ``[n, 1]``:
row j holds j, so the gather returns the indices unchanged, and an index outside [0, n) is a
device fault that fails the launch (``RuntimeError: kernel …: dma.gather on core c: index j
(entry e of the index list) is outside the table's rows [0, n)``), in compiled graphs and eager
kernels alike, in both engines, never a host access outside the table. The decomposition then
uses the gathered indices, so the check is part of the data flow (no dead-code elimination).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten

__all__ = ["checked_index", "wrapped_index"]


def checked_index(index: torch.Tensor, n: int) -> torch.Tensor:
    """index (int32/int64, any shape) as int32, each element checked on the card to be in
    [0, n) (a device fault otherwise); the values are unchanged."""
    shape, m = list(index.shape), index.numel()
    if m == 0:  # nothing to check
        return index
    table = aten.view.default(aten.arange.default(n, dtype=torch.int32, device=index.device), [n, 1])
    flat = aten.view.default(aten.clone.default(index, memory_format=torch.contiguous_format), [m])
    return aten.view.default(aten.embedding.default(table, flat), shape)


def wrapped_index(index: torch.Tensor, n: int) -> torch.Tensor:
    """Negative indices counted from the end, as torch's advanced indexing: index + n where
    index < 0 (an index still outside [0, n) is left for the gather or scatter to fault on)."""
    return aten.where.self(aten.lt.Scalar(index, 0), aten.add.Tensor(index, n), index)
