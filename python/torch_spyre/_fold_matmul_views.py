"""Matmuls read their batch dims as stored: ATen's matmul and linear flatten a 3-d or 4-d
operand to 2-d (mm) or 3-d (bmm) with a view, multiply, and view the result back. On the card
such a view is not free: the generic stick layout keeps dim 0 innermost among the rows, so
dropping or merging leading dims reorders sticks (a copy kernel before and after every
linear on [1, S, H] activations, and around both attention bmms). The frontend's matmul takes
up to two batch dims and a 2-d weight, so

    a2 = view(a, [P, K]); m = mm(a2, w); y = view(m, [*lead, N])        ->  y = matmul(a, w)
    a3 = view(a, [B, M, K]); b3 = view(b, [B, K, N]); m = bmm(a3, b3);
    y = view(m, [*batch, M, N])                                          ->  y = matmul(a, b)

where the views only flatten leading dims. The same products in fp32 and one DL16 rounding of
each result; the work division sees the batch dims now and may choose another split (a K split
sums its partials in another order)."""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten
_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)


def _shape(n: object) -> tuple[int, ...] | None:
    val = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or any(not isinstance(s, int) for s in val.shape):
        return None
    return tuple(val.shape)


def _flattened(view: object, keep: int) -> torch.fx.Node | None:
    """The source of `view` when it only merges the source's dims before its last `keep` ones
    into one (a rank-3 or rank-4 source), else None."""
    if not (isinstance(view, torch.fx.Node) and view.op == "call_function" and view.target in _VIEWS):
        return None
    src = view.args[0]
    vs, ss = _shape(view), _shape(src)
    if vs is None or ss is None or not 3 <= len(ss) <= 4 or len(vs) != keep + 1:
        return None
    if ss[-keep:] != vs[-keep:] or math.prod(ss[:-keep]) != vs[0]:
        return None
    return src


def fold_matmul_views(gm: torch.fx.GraphModule) -> int:
    """Rewrites the patterns of the module docstring in place; returns how many matmuls."""
    g = gm.graph
    folded = 0
    for mm in list(g.nodes):
        if mm.op != "call_function" or mm.target not in (aten.mm.default, aten.bmm.default) or mm.kwargs:
            continue
        users = list(mm.users)
        if not users or any(u.op != "call_function" or u.target not in _VIEWS for u in users):
            continue
        outs = {_shape(u) for u in users}
        a2, b2 = mm.args
        if mm.target is aten.mm.default:
            a, b = _flattened(a2, 1), b2
            want = None if a is None else (*_shape(a)[:-1], _shape(mm)[-1])
        else:
            a, b = _flattened(a2, 2), _flattened(b2, 2)
            ok = a is not None and b is not None and _shape(a)[:-2] == _shape(b)[:-2]
            want = (*_shape(a)[:-2], *_shape(mm)[-2:]) if ok else None
        if want is None or outs != {want}:
            continue
        with g.inserting_before(mm):
            new = g.call_function(aten.matmul.default, (a, b))
        new.meta["val"] = users[0].meta["val"]
        for u in users:
            u.replace_all_uses_with(new)
            g.erase_node(u)
        g.erase_node(mm)
        for v in {a2, b2}:
            if isinstance(v, torch.fx.Node) and not v.users:
                g.erase_node(v)
        folded += 1
    if folded:
        gm.recompile()
    return folded
