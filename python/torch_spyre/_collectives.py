"""Collectives in compiled graphs: torch-spyre's ``spyre::*_async`` / ``spyre::wait_work`` ops.

``torch.distributed._functional_collectives`` (all_reduce, all_gather_into_tensor,
reduce_scatter_tensor, broadcast, wait_tensor) trace into ATen graphs as
``_c10d_functional::*`` nodes. The spyre backend rewrites them (``rewrite_collectives``) to
torch-spyre's ops, with its names and schemas:

* ``spyre::broadcast_async(Tensor x, int src_rank=0, str group_name="default") -> Tensor``
* ``spyre::all_reduce_async(Tensor x, str reduce_op="sum", str group_name="default") -> Tensor``
* ``spyre::all_gather_async(Tensor x, int group_size=1, str group_name="default") -> Tensor``
  (gathered along dim 0)
* ``spyre::reduce_scatter_async(Tensor x, str reduce_op="sum", int group_size=1,
  str group_name="default") -> Tensor`` (scattered along dim 0)
* ``spyre::wait_work(Tensor x) -> Tensor``: waits for the collective that produces ``x``.

Each ``*_async`` op starts the collective (``async_op=True``) through the process group named
``group_name`` (the spyre c10d backend for spyre tensors: host staging and gloo, see
``_distributed``) and returns its result tensor on the card at once; ``wait_work`` completes
it. torch's ``_c10d_functional`` ops on spyre tensors (eager ``funcol`` calls) run through the
same kernels (PrivateUse1 registrations), so ``wait_tensor`` and ``AsyncCollectiveTensor``
work on spyre as on CUDA. The partitioner runs these
nodes between the compiled partitions, on the card's tensors, never as CPU fallback nodes
(``COLLECTIVE_OPS``). ``group_name="default"`` is the default (WORLD) group, as in torch-spyre.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

__all__ = ["COLLECTIVE_OPS", "rewrite_collectives", "resolve_group_name", "call_implementations"]

_lib = torch.library.Library("spyre", "FRAGMENT")  # noqa: TOR901 - the library lives for the process

_lib.define("broadcast_async(Tensor x, int src_rank=0, str group_name=\"default\") -> Tensor")
_lib.define("all_reduce_async(Tensor x, str reduce_op=\"sum\", str group_name=\"default\") -> Tensor")
_lib.define("all_gather_async(Tensor x, int group_size=1, str group_name=\"default\") -> Tensor")
_lib.define("reduce_scatter_async(Tensor x, str reduce_op=\"sum\", int group_size=1, "
            "str group_name=\"default\") -> Tensor")
_lib.define("wait_work(Tensor x) -> Tensor")

_c10d = torch.ops._c10d_functional

# Collectives in flight: output tensor's data_ptr -> its Work (waited by wait_work).
_works: dict[int, Any] = {}
_works_lock = threading.Lock()


def resolve_group_name(group_name: str) -> Any:
    """The process group of a name; torch-spyre's "default" is the default (WORLD) group."""
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    if not dist.is_initialized():
        raise RuntimeError("spyre collectives: the default process group is not initialized "
                           "(call torch.distributed.init_process_group first)")
    if group_name == "default":
        return dist.group.WORLD
    return _resolve_process_group(group_name)


def _reduce_op(name: str) -> Any:
    import torch.distributed as dist

    op = getattr(dist.ReduceOp, name.upper(), None)
    if op is None or name.lower() not in ("sum", "avg", "product", "min", "max", "band", "bor", "bxor"):
        raise ValueError(f"spyre collectives: unknown reduce op {name!r}")
    return op


def _started(out: torch.Tensor, work: Any) -> torch.Tensor:
    if work is not None:
        with _works_lock:
            _works[out.data_ptr()] = work
    return out


def _check_size(kind: str, pg: Any, group_size: int) -> None:
    if pg.size() != group_size:
        raise ValueError(f"spyre.{kind}: group_size {group_size} but the group has {pg.size()} ranks")


def _broadcast(x: torch.Tensor, src_rank: int = 0, group_name: str = "default") -> torch.Tensor:
    import torch.distributed as dist

    pg = resolve_group_name(group_name)
    out = x.clone(memory_format=torch.contiguous_format)
    return _started(out, dist.broadcast(out, group=pg, group_src=src_rank, async_op=True))


def _all_reduce(x: torch.Tensor, reduce_op: str = "sum", group_name: str = "default") -> torch.Tensor:
    import torch.distributed as dist

    pg = resolve_group_name(group_name)
    out = x.clone(memory_format=torch.contiguous_format)
    return _started(out, dist.all_reduce(out, op=_reduce_op(reduce_op), group=pg, async_op=True))


def _all_gather(x: torch.Tensor, group_size: int = 1, group_name: str = "default") -> torch.Tensor:
    import torch.distributed as dist

    pg = resolve_group_name(group_name)
    _check_size("all_gather_async", pg, group_size)
    x = x.contiguous()
    out = x.new_empty((x.size(0) * group_size, *x.shape[1:]) if x.dim() else (group_size,))
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # torch 2.13's name
    return _started(out, gather(out, x, group=pg, async_op=True))


def _reduce_scatter(x: torch.Tensor, reduce_op: str = "sum", group_size: int = 1,
                    group_name: str = "default") -> torch.Tensor:
    import torch.distributed as dist

    pg = resolve_group_name(group_name)
    _check_size("reduce_scatter_async", pg, group_size)
    if x.dim() == 0 or x.size(0) % group_size:
        raise ValueError(f"spyre.reduce_scatter_async: dim 0 of size {x.size(0) if x.dim() else 0} "
                         f"does not split over {group_size} ranks")
    x = x.contiguous()
    out = x.new_empty((x.size(0) // group_size, *x.shape[1:]))
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor  # torch 2.13's name
    return _started(out, scatter(out, x, op=_reduce_op(reduce_op), group=pg, async_op=True))


def _wait_work(x: torch.Tensor) -> torch.Tensor:
    with _works_lock:
        work = _works.pop(x.data_ptr(), None)
    if work is not None:
        work.wait()
    return x


for _name, _fn in (("broadcast_async", _broadcast), ("all_reduce_async", _all_reduce),
                   ("all_gather_async", _all_gather), ("reduce_scatter_async", _reduce_scatter),
                   ("wait_work", _wait_work)):
    _lib.impl(_name, _fn, "CompositeExplicitAutograd")

# torch's functional collectives on spyre tensors (eager funcol calls, AsyncCollectiveTensor)
# run through the same kernels: torch's own ones reach only part of a Python process group.
_c10d_lib = torch.library.Library("_c10d_functional", "IMPL")  # noqa: TOR901
_c10d_lib.impl("broadcast", _broadcast, "PrivateUse1")
_c10d_lib.impl("all_reduce", _all_reduce, "PrivateUse1")
_c10d_lib.impl("all_gather_into_tensor", _all_gather, "PrivateUse1")
_c10d_lib.impl("reduce_scatter_tensor", _reduce_scatter, "PrivateUse1")
_c10d_lib.impl("wait_tensor", _wait_work, "PrivateUse1")


def _fake_like(x: torch.Tensor, *args: Any) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _fake_gather(x: torch.Tensor, group_size: int = 1, group_name: str = "default") -> torch.Tensor:
    return x.new_empty((x.size(0) * group_size, *x.shape[1:]))


def _fake_scatter(x: torch.Tensor, reduce_op: str = "sum", group_size: int = 1,
                  group_name: str = "default") -> torch.Tensor:
    return x.new_empty((x.size(0) // group_size, *x.shape[1:]))


torch.library.register_fake("spyre::broadcast_async", _fake_like, lib=_lib)
torch.library.register_fake("spyre::all_reduce_async", _fake_like, lib=_lib)
torch.library.register_fake("spyre::all_gather_async", _fake_gather, lib=_lib)
torch.library.register_fake("spyre::reduce_scatter_async", _fake_scatter, lib=_lib)
torch.library.register_fake("spyre::wait_work", lambda x: torch.empty_like(x), lib=_lib)

_spyre = torch.ops.spyre
COLLECTIVE_OPS = frozenset({
    _spyre.broadcast_async.default, _spyre.all_reduce_async.default, _spyre.all_gather_async.default,
    _spyre.reduce_scatter_async.default, _spyre.wait_work.default,
})

# _c10d_functional op -> (spyre op, the spyre op's arguments from the functional op's).
_REWRITES = {
    _c10d.broadcast.default: (_spyre.broadcast_async.default, lambda x, src, g: (x, src, g)),
    _c10d.all_reduce.default: (_spyre.all_reduce_async.default, lambda x, op, g: (x, op, g)),
    _c10d.all_gather_into_tensor.default: (_spyre.all_gather_async.default, lambda x, n, g: (x, n, g)),
    _c10d.reduce_scatter_tensor.default: (_spyre.reduce_scatter_async.default,
                                          lambda x, op, n, g: (x, op, n, g)),
    _c10d.wait_tensor.default: (_spyre.wait_work.default, lambda x: (x,)),
}


def rewrite_collectives(gm: torch.fx.GraphModule) -> int:
    """Replaces the ``_c10d_functional`` nodes of an ATen graph by their ``spyre::`` ops; other
    ``_c10d_functional`` ops (coalesced, all_to_all_single) are ``Unsupported``. Returns the
    number of collective nodes."""
    from ._errors import Unsupported

    count = 0
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if target in _REWRITES:
            op, args = _REWRITES[target]
            node.target = op
            node.args = args(*node.args, **node.kwargs)
            node.kwargs = {}
            count += 1
        elif target in COLLECTIVE_OPS:
            count += 1
        elif isinstance(target, torch._ops.OpOverload) and target.namespace == "_c10d_functional":
            raise Unsupported(f"collective {target} in a compiled spyre graph")
    if count:
        gm.recompile()
    return count


_IMPLEMENTATIONS = {
    _spyre.broadcast_async.default: _broadcast,
    _spyre.all_reduce_async.default: _all_reduce,
    _spyre.all_gather_async.default: _all_gather,
    _spyre.reduce_scatter_async.default: _reduce_scatter,
    _spyre.wait_work.default: _wait_work,
}


def call_implementations(gm: torch.fx.GraphModule) -> None:
    """Makes the collective nodes of a graph that is about to run call their implementations
    directly rather than through the dispatcher. ``wait_work`` returns the tensor it waited for,
    as torch's own ``_c10d_functional.wait_tensor`` does; AOT autograd's first-call check of
    custom ops (an error when ``CI`` is set) exempts torch's collectives from that rule but not
    ours, and between partitions there is nothing to dispatch."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in _IMPLEMENTATIONS:
            node.target = _IMPLEMENTATIONS[node.target]
            changed = True
    if changed:
        gm.recompile()
