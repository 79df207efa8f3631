"""Zero-size tensors: ATen ops whose operands or results hold no elements need no kernel.

The C++ frontend rejects any graph with a zero-size value (work division, layouts and LX
planning divide by dimensions), so these ops never reach it:

* ``cat`` drops its empty parts and runs on the rest;
* any other op with an empty operand runs in torch on CPU copies of its operands, so results and
  errors are torch's (``sum`` over an empty dim is 0, ``mm`` with K = 0 is zeros, ``mean`` is
  NaN, ``amax`` over an empty dim raises torch's error, an empty result is empty). Empty
  operands cost nothing to move and the result is a constant of its shape; only an op that also
  has a non-empty operand and a non-empty result counts as a CPU fallback (FallbackWarning).

In compiled graphs ``drop_empty_cat_parts`` first removes the empty parts of every ``cat`` (a
KV cache's first append: ``cat([empty, k])``), so that the graph compiles as a whole;
``compiled_graph_has_empty`` then tells the compiled path that a graph still has an empty value;
such a graph runs node by node through the eager kernels (and so through ``empty_result``).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from . import _fallback

aten = torch.ops.aten

__all__ = ["empty_result", "compiled_graph_has_empty", "drop_empty_cat_parts"]

_CAT = {aten.cat.default}


def _is_spyre(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "spyre"


def _meta(x: Any) -> Any:
    if _is_spyre(x):
        return torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device="meta")
    return x


def _cat_without_empty(op: Any, args: tuple, kwargs: dict) -> Any:
    from ._lowering import bind_arguments

    bound = bind_arguments(op, args, kwargs)
    parts = list(bound["tensors"])
    keep = [t for t in parts if t.numel() != 0]
    if not keep or len(keep) == len(parts):
        return NotImplemented
    # torch's cat promotes over every part, the empty ones too.
    dtype = functools.reduce(torch.promote_types, [t.dtype for t in parts])
    return op([t.to(dtype) for t in keep], bound.get("dim", 0))


def empty_result(op: Any, args: tuple, kwargs: dict, flat: list) -> Any:
    """The result of ``op`` on spyre tensors when an operand or the result is empty, computed
    without a kernel; ``NotImplemented`` when nothing is empty (run the op as usual).
    ``flat``: the leaves of the arguments (``_argscan.leaves``)."""
    tensors = [x for x in flat if _is_spyre(x)]
    if not tensors:
        return NotImplemented
    if all(t.numel() != 0 for t in tensors):
        # (A non-empty operand with an empty result, e.g. a slice [2:2], reaches the frontend,
        # which rejects it, and runs on the CPU.)
        return NotImplemented
    if op in _CAT:
        res = _cat_without_empty(op, args, kwargs)
        if res is not NotImplemented:
            return res
    # torch computes the result (or raises its own error, e.g. amax over an empty dim) from CPU
    # copies: the empty operands cost nothing to move, and the result is a constant.
    nonempty = [t for t in tensors if t.numel() != 0]
    if nonempty and not all(o.numel() == 0 for o in _result_metas(op, args, kwargs)):
        _fallback.note_fallback(str(op), "an empty operand with a non-empty result")
    return _fallback.run_on_cpu(op, args, kwargs)


def _result_metas(op: Any, args: tuple, kwargs: dict) -> list:
    outs, _ = tree_flatten(op(*tree_map(_meta, args), **tree_map(_meta, kwargs)))
    return [o for o in outs if isinstance(o, torch.Tensor)]


def compiled_graph_has_empty(gm: torch.fx.GraphModule) -> bool:
    """A value of the ATen graph (input, intermediate or result) with no elements."""
    for node in gm.graph.nodes:
        vals, _ = tree_flatten(node.meta.get("val"))
        for v in vals:
            if isinstance(v, torch.Tensor) and v.numel() == 0:
                return True
    return False


def drop_empty_cat_parts(gm: torch.fx.GraphModule) -> bool:
    """Rewrites every ``cat`` with empty and non-empty parts to the non-empty ones (cast to the
    cat's result dtype: torch promotes over the empty parts too); the values only those parts
    used become dead code. True if the graph changed."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _CAT or not node.args:
            continue
        parts = list(node.args[0])
        vals = [p.meta.get("val") if isinstance(p, torch.fx.Node) else None for p in parts]
        out = node.meta.get("val")
        if not isinstance(out, torch.Tensor) or not all(isinstance(v, torch.Tensor) for v in vals):
            continue
        keep = [(p, v) for p, v in zip(parts, vals) if v.numel() != 0]
        if not keep or len(keep) == len(parts):
            continue
        new_parts = []
        with gm.graph.inserting_before(node):
            for p, v in keep:
                if v.dtype != out.dtype:
                    cast = gm.graph.call_function(aten._to_copy.default, (p,), {"dtype": out.dtype})
                    cast.meta["val"] = v.to(out.dtype)
                    p = cast
                new_parts.append(p)
        node.args = (new_parts, *node.args[1:])
        changed = True
    if changed:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return changed
