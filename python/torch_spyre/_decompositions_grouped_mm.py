"""Grouped matmuls (``aten._grouped_mm`` and transformers' ``grouped_mm_fallback``, the MoE
experts' matmul) as static card work: out[s] = x[s] @ w[g] for the rows s of group g, the
groups being the contiguous row ranges that ``offs`` (cumulative ends) gives; rows past
offs[-1] are zero. Two forms, equal to the last bit:

- dense: every row through every group's weights in one batched matmul (one matmul by the
  stack as stored when it is a transposed [E, N, K] one, transformers' experts), masked by the
  row's group and summed over the groups (E * S rows through the PT array, each weight read once);
- tiled: rows in tiles of GROUPED_MM_TILE, one tile-by-weights matmul per (tile, group) pair
  that shares a row ((nT + E - 1) * T rows; the pairs' weights gathered), for many rows and
  groups (``grouped_mm_form``).

Registered into ``_decompositions_routing.ROUTING_COMPILE_DECOMPOSITIONS`` on import
(``_decompositions`` imports this module).
"""

from __future__ import annotations

from typing import Any

import torch

from ._decompositions_routing import _INTS, _ones_i32, _register_compile

aten = torch.ops.aten

__all__ = ["grouped_mm", "grouped_mm_form"]

#: largest group count of a grouped matmul
GROUPED_MM_MAX_GROUPS = 256
#: rows per tile of the tiled grouped matmul
GROUPED_MM_TILE = 32
#: "auto" (grouped_mm_form's rule), "dense" or "tiled" (tests and measurements force one)
GROUPED_MM_FORM = "auto"
#: the tiled form when the dense form runs this many times its rows through the PT array
GROUPED_MM_TILED_GAIN = 10


def _grouped_mm_ok(x: torch.Tensor, w: torch.Tensor, offs: Any) -> bool:
    return (x.dim() == 2 and w.dim() == 3 and isinstance(offs, torch.Tensor) and offs.dim() == 1
            and offs.shape[0] == w.shape[0] and offs.dtype in _INTS and x.shape[1] == w.shape[1]
            and x.is_floating_point() and w.dtype == x.dtype and w.shape[0] <= GROUPED_MM_MAX_GROUPS
            and x.shape[0] > 0)


def _grouped_mm_dense(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> Any:
    """out[s] = x[s] @ w[g] for the rows s of group g (offs[g-1] <= s < offs[g]; rows past
    offs[-1] are zero), as one dense (batched) matmul over all groups masked by each row's group:
    E times the FLOPs of the grouped form, but static shapes (the group sizes are data)."""
    e, s, k, n = w.shape[0], x.shape[0], x.shape[1], w.shape[2]
    group = _row_groups(offs, _iota(s, [s], x.device))
    if not w.is_contiguous() and aten.transpose.int(w, 1, 2).is_contiguous():
        # w an [E, N, K] stack seen transposed (transformers' experts): one [S, K] x [K, E * N]
        # matmul of x by the stack as stored (a linear weight of E * N rows), no copy of x per
        # group; each row then keeps its group's N columns
        stacked = aten.view.default(aten.transpose.int(w, 1, 2), [e * n, k])
        prod = aten.view.default(aten.mm.default(x, aten.t.default(stacked)), [s, e, n])
        hot = aten.eq.Tensor(aten.view.default(group, [s, 1, 1]), _iota(e, [1, e, 1], x.device))  # [S, E, 1]
        return aten.sum.dim_IntList(aten.where.ScalarOther(hot, prod, 0), [1])
    groups = aten.view.default(aten.arange.default(e, dtype=torch.int32, device=x.device), [e, 1, 1])
    hot = aten.eq.Tensor(aten.view.default(group, [1, s, 1]), groups)  # [E, S, 1]
    prod = aten.bmm.default(aten.expand.default(aten.unsqueeze.default(x, 0), [e, s, k]), w)
    return aten.sum.dim_IntList(aten.where.ScalarOther(hot, prod, 0), [0])


def _row_groups(offs: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """int32, rows' shape: the group of each row index, the number of group ends at or before
    it (E for the rows past offs[-1], which belong to no group); reduced over a leading [E] dim."""
    e = offs.shape[0]
    ends = aten.view.default(aten._to_copy.default(offs, dtype=torch.int32), [e] + [1] * rows.dim())
    shape = [e] + list(rows.shape)
    le = aten.le.Tensor(ends, aten.unsqueeze.default(rows, 0))
    return aten.sum.dim_IntList(aten.where.ScalarOther(le, _ones_i32(shape, rows.device), 0), [0], False,
                                dtype=torch.int32)


def _iota(n: int, shape: list[int], device: torch.device) -> torch.Tensor:
    return aten.view.default(aten.arange.default(n, dtype=torch.int32, device=device), shape)


def _gather_matrices(w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """w[idx] of a [E, K, N] stack, gathered in w's own memory order: an [E, N, K] stack seen
    transposed (transformers' experts pass their weights so) is gathered as it is and the
    gathered stack transposed back as a view, which bmm reads without a copy."""
    e, k, n = w.shape
    if not w.is_contiguous() and aten.transpose.int(w, 1, 2).is_contiguous():
        rows = aten.embedding.default(aten.view.default(aten.transpose.int(w, 1, 2), [e, n * k]), idx)
        return aten.transpose.int(aten.view.default(rows, [idx.shape[0], n, k]), 1, 2)
    table = w if w.is_contiguous() else aten.clone.default(w, memory_format=torch.contiguous_format)
    return aten.view.default(aten.embedding.default(aten.view.default(table, [e, k * n]), idx), [idx.shape[0], k, n])


def _grouped_mm_tiled(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> Any:
    """The grouped matmul over (row tile, group) pairs: rows in tiles of GROUPED_MM_TILE, and
    one tile-by-expert matmul for each pair of a tile and a group it has rows of. A group is a
    contiguous range of rows, so at most nT + E - 1 pairs meet (nT tiles): static shapes, and
    (nT + E - 1) * T rows through the PT array instead of E * S (at S = 128 rows, E = 64
    experts: 2,144 instead of 8,192). The pairs are enumerated on the card (a [nT, E] "tile
    meets group" mask, its running count, one-hot selection of the p-th pair); tiles and expert
    weights are gathered by the pairs' indices (dma.gather), each product is masked to the
    rows of its group, and the masked products are added back to their tiles by a one-hot
    matmul. Every output row gets exactly one product (its group's, in one pair) plus zeros,
    so the result equals the dense form's."""
    e, s, k, n = w.shape[0], x.shape[0], x.shape[1], w.shape[2]
    t = GROUPED_MM_TILE
    nt = -(-s // t)
    sp, p = nt * t, nt + e - 1
    dev = x.device
    if sp != s:
        x = aten.constant_pad_nd.default(x, [0, 0, 0, sp - s], 0.0)
    # int32 throughout (the card transposes int32 bit for bit: frontend/lib/int_transpose.cpp)
    group = _row_groups(offs, _iota(sp, [nt, 1, t], dev))  # [nT, 1, T]: row tt*T + r
    hit = aten.eq.Tensor(group, _iota(e, [1, e, 1], dev))  # [nT, E, T]
    meets = aten.amax.default(aten.where.ScalarOther(hit, _ones_i32([nt, e, t], dev), 0), [2])
    # pair number of each meeting, row-major: running count within the tile + the tiles before
    per_tile = aten.sum.dim_IntList(meets, [1], True, dtype=torch.int32)  # [nT, 1]
    before = aten.sub.Tensor(aten.cumsum.default(per_tile, 0, dtype=torch.int32), per_tile)
    rank = aten.add.Tensor(aten.cumsum.default(meets, 1, dtype=torch.int32), aten.sub.Tensor(before, 1))
    sel = aten.logical_and.default(aten.eq.Tensor(aten.unsqueeze.default(rank, 0), _iota(p, [p, 1, 1], dev)),
                                   aten.eq.Scalar(aten.unsqueeze.default(meets, 0), 1))  # [P, nT, E]

    def pick(values: torch.Tensor) -> torch.Tensor:  # [P]: sum over the selected entry
        inner = aten.sum.dim_IntList(aten.where.ScalarOther(sel, values, 0), [2], False, dtype=torch.int32)
        return aten.sum.dim_IntList(inner, [1], False, dtype=torch.int32)

    tile, grp = pick(_iota(nt, [1, nt, 1], dev)), pick(_iota(e, [1, 1, e], dev))
    valid = pick(_ones_i32([1, nt, e], dev))  # 0 for the pairs past the last meeting
    xs = aten.view.default(aten.embedding.default(aten.view.default(x, [nt, t * k]), tile), [p, t, k])
    ws = _gather_matrices(w, grp)  # [P, K, N]
    prod = aten.bmm.default(xs, ws)  # [P, T, N]
    # the groups of the pair's tile's rows: [P, T, nT] selected by the tile, summed over nT
    rows_t = aten.add.Tensor(_iota(t, [t, 1], dev), aten.mul.Tensor(_iota(nt, [1, nt], dev), t))  # [T, nT]
    on_tile = aten.eq.Tensor(aten.view.default(tile, [p, 1, 1]), _iota(nt, [1, 1, nt], dev))
    groups_t = aten.unsqueeze.default(_row_groups(offs, rows_t), 0)
    row_group = aten.sum.dim_IntList(aten.where.ScalarOther(on_tile, groups_t, 0), [2], False,
                                     dtype=torch.int32)  # [P, T]
    keep = aten.logical_and.default(aten.eq.Tensor(row_group, aten.view.default(grp, [p, 1])),
                                    aten.eq.Scalar(aten.view.default(valid, [p, 1]), 1))
    prod = aten.where.ScalarOther(aten.view.default(keep, [p, t, 1]), prod, 0)
    back = aten.where.ScalarOther(aten.eq.Tensor(_iota(nt, [nt, 1], dev), aten.view.default(tile, [1, p])),
                                  aten.full.default([nt, p], 1.0, dtype=x.dtype, device=dev), 0)  # [nT, P] one-hot
    out = aten.view.default(aten.mm.default(back, aten.view.default(prod, [p, t * n])), [sp, n])
    return out if sp == s else aten.slice.Tensor(out, 0, 0, s)


@_register_compile(aten._grouped_mm.default)
def _grouped_mm(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                out_dtype: torch.dtype | None = None) -> Any:
    if bias is not None or (out_dtype is not None and out_dtype != x.dtype):
        return NotImplemented
    return grouped_mm(x, w, offs)


def grouped_mm_form(groups: int, rows: int) -> str:
    """"dense" or "tiled" for a grouped matmul of `rows` rows in `groups` groups (GROUPED_MM_FORM
    "auto"). The tiled form gathers the pairs' expert weights (a DDR copy of about the weights)
    and pays ~50 small bookkeeping kernels; it wins once the dense form's E * S rows are about
    ten times its (nT + E - 1) * T (simulated, K = 256, N = 1024, E = 64 experts, dense / tiled
    µs: S = 128 1,131 / 1,553; S = 256 1,305 / 1,615; S = 512 2,364 / 1,740; S = 1024 4,473 /
    1,311; E = 16, S = 1024: 1,173 / 1,179). The host agrees where models run it: GraniteMoE's
    experts (E = 4, S = 128 rows, K 256, N 1024 / 512; 2 layers, whole forward, stop 32, before
    the dense form's single matmul) dense / tiled: 276 / 582 kernels, 1,108 / 2,192 simulated
    µs, and the tiled form's extra kernels cost host time too (process CPU per warm forward
    25-27 / 34-37 ms, loaded 2-core host), so the rule stays on the PT-array rows."""
    if GROUPED_MM_FORM != "auto":
        return GROUPED_MM_FORM
    t = GROUPED_MM_TILE
    tiled_rows = (-(-rows // t) + groups - 1) * t
    return "tiled" if groups * rows >= GROUPED_MM_TILED_GAIN * tiled_rows else "dense"


def grouped_mm(x: torch.Tensor, w: torch.Tensor, offs: Any) -> Any:
    """The grouped matmul in the form grouped_mm_form picks; NotImplemented outside its bounds."""
    if not _grouped_mm_ok(x, w, offs):
        return NotImplemented
    if grouped_mm_form(w.shape[0], x.shape[0]) == "tiled":
        return _grouped_mm_tiled(x, w, offs)
    return _grouped_mm_dense(x, w, offs)
