"""torch.distributed on spyre tensors: the c10d backend "spyre" (also registered under
torch-spyre's name "spyreccl").

One process (rank) drives one simulated card. Data moves between ranks over gloo: the backend
holds a ``ProcessGroupGloo`` built over the same store (under the prefix ``spyre_gloo/``), so
ranks may live on several hosts, and gloo's transport, timeouts and errors are torch's own.
For every collective on spyre tensors the backend

1. checks that every rank called the same collective with the same shapes and dtypes (one small
   gloo all_gather of a descriptor per call; a mismatch raises ``ValueError`` on every rank
   naming the ranks and shapes, where gloo would hang, fail obscurely or read past a buffer);
2. reads the spyre tensors to host (the card's layout is undone by the device-to-host copy);
3. starts the gloo collective on the host copies (it runs on gloo's threads: ``async_op=True``
   returns at once);
4. on ``Work.wait()``, waits for gloo and writes the results back into the spyre tensors in
   place (``copy_``, so each keeps its storage and device layout).

CPU tensors go to gloo directly, so ``init_process_group(backend="spyre")`` serves both
devices; ``"cpu:gloo,spyre:spyre"`` works too (torch keeps one process group object, ours,
for both). ``ReduceOp.AVG`` (gloo has none) is a SUM divided by the group size on the host in
the tensor's dtype; ``PREMUL_SUM`` is ``Unsupported``. int64 tensors are int32 on the card:
they reduce on host as int64 and are stored back as int32.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any, Callable, Sequence

import torch
import torch.distributed as dist

from ._errors import Unsupported

__all__ = ["BACKEND_NAME", "BACKEND_ALIASES", "SpyreProcessGroup", "register_backend", "collective_stats",
           "link_time_us", "link_figures"]

BACKEND_NAME = "spyre"
# torch-spyre's backend name: its scripts call init_process_group("cpu:gloo,spyre:spyreccl").
BACKEND_ALIASES = ("spyreccl",)
GLOO_PREFIX = "spyre_gloo/"
_MAX_DIMS = 8

_DTYPE_CODES = {dt: i for i, dt in enumerate([
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.float8_e4m3fn])}


def link_figures() -> tuple[float, float]:
    """(bytes per second per direction, µs per collective step) of the card-to-card link:
    HardwareConfig's ``linkBytesPerSecond`` and ``linkLatencyNs`` (hardware_config.def states
    the assumptions: PCIe Gen5 x16 peer to peer)."""
    from . import _C

    hw = _C.hardware_config()
    return float(hw["linkBytesPerSecond"]), float(hw["linkLatencyNs"]) / 1e3


def link_time_us(kind: str, nbytes: int, world: int) -> float:
    """Modelled time of one collective over ring links: ``nbytes`` is the per-rank payload
    (all_reduce: the tensor; all_gather: one rank's input; reduce_scatter: one rank's input,
    the whole tensor; broadcast and send: the tensor). Ring algorithms: all_reduce is a
    reduce_scatter plus an all_gather, 2(n-1) steps of nbytes/n each; all_gather and
    reduce_scatter are n-1 steps; broadcast and point-to-point are one pipelined transfer."""
    if world <= 1 and kind != "send":
        return 0.0
    bw, latency_us = link_figures()
    bw_per_us = bw / 1e6
    n = max(world, 1)
    if kind in ("all_reduce",):
        return 2 * (n - 1) * (latency_us + nbytes / n / bw_per_us)
    if kind in ("reduce_scatter", "all_to_all"):
        return (n - 1) * (latency_us + nbytes / n / bw_per_us)
    if kind in ("all_gather", "gather", "scatter"):
        return (n - 1) * (latency_us + nbytes / bw_per_us)
    if kind == "barrier":
        return 2 * (n - 1) * latency_us
    return latency_us + nbytes / bw_per_us  # broadcast, reduce, send


class CollectiveStats:
    """Collectives this process ran on spyre tensors since the last ``reset()``: calls, bytes
    (per-rank payload, as stored on the card) and their modelled link time (``link_time_us``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.calls, self.bytes, self.simulated_us = 0, 0, 0.0
            self.by_kind: dict[str, int] = {}

    def add(self, kind: str, tensors: Sequence[torch.Tensor], world: int) -> None:
        nbytes = sum(t.numel() * (4 if t.dtype == torch.int64 else t.element_size()) for t in tensors
                     if _is_spyre(t))
        if not any(_is_spyre(t) for t in tensors) and kind != "barrier":
            return
        us = link_time_us(kind, nbytes, world)
        with self._lock:
            self.calls += 1
            self.bytes += nbytes
            self.simulated_us += us
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        from . import _C

        _C.trace_collective(kind, us, nbytes, world)

    def snapshot(self) -> dict:
        with self._lock:
            return {"calls": self.calls, "bytes": self.bytes, "simulated_us": self.simulated_us,
                    "by_kind": dict(self.by_kind)}


collective_stats = CollectiveStats()


def _is_spyre(t: torch.Tensor) -> bool:
    return t.device.type == "spyre"


_CODE_DTYPES = {i: str(dt).replace("torch.", "") for dt, i in _DTYPE_CODES.items()}


def _describe(desc: list) -> str:
    """'[4, 8] float16, ...' from an ``_agree`` descriptor."""
    parts, i = [], 2
    for _ in range(desc[1]):
        dtype, ndim = desc[i], desc[i + 1]
        parts.append(f"{list(desc[i + 2:i + 2 + ndim])} {_CODE_DTYPES.get(dtype, '?')}")
        i += 2 + _MAX_DIMS
    return ", ".join(parts)


def _red_name(op: Any) -> str:
    return str(getattr(op, "op", op)).rsplit(".", 1)[-1]


class _StagedWork(dist.Work):
    """A gloo Work on host copies; ``wait()`` waits for gloo, then ``finish`` writes the host
    results back to the spyre tensors (once). Errors from gloo (a dead peer, a timeout) are
    torch.distributed's own and reach the caller of ``wait()`` unchanged."""

    def __init__(self, inner: Any, finish: Callable[[], None], result: Callable[[], list]) -> None:
        super().__init__()
        self._inner = inner
        self._finish = finish
        self._result = result
        self._done = False
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def wait(self, timeout: datetime.timedelta = datetime.timedelta(0)) -> bool:
        with self._lock:
            if self._error is not None:
                raise self._error
            if not self._done:
                try:
                    if self._inner is not None:
                        if timeout:
                            self._inner.wait(timeout)
                        else:
                            self._inner.wait()
                    self._finish()
                except BaseException as e:
                    self._error = e
                    raise
                self._done = True
        return True

    def is_completed(self) -> bool:
        return self._done

    def is_success(self) -> bool:
        return self._done and self._error is None

    def exception(self) -> Any:
        return self._error

    def get_future(self) -> torch.futures.Future:
        """Completes the collective (the simulator writes results back on the caller's thread,
        never on gloo's) and returns a finished future holding the output tensors."""
        fut: torch.futures.Future = torch.futures.Future()
        try:
            self.wait()
        except Exception as e:  # noqa: BLE001 - the future carries the error
            fut.set_exception(e)
            return fut
        fut.set_result(self._result())
        return fut


class _Stage:
    """Host copies of spyre tensors and the write-back of results into them."""

    def __init__(self) -> None:
        self.pairs: list[tuple[torch.Tensor, torch.Tensor]] = []

    def host(self, t: torch.Tensor, read: bool = True) -> torch.Tensor:
        if not _is_spyre(t):
            return t
        if read:
            h = t.detach().to("cpu").contiguous()
        else:
            h = torch.empty(t.shape, dtype=t.dtype)
        self.pairs.append((t, h))
        return h

    def host_out(self, t: torch.Tensor) -> torch.Tensor:
        """A host buffer for an output-only tensor (nothing to read from the card)."""
        return self.host(t, read=False)

    def write_back(self) -> None:
        with torch.no_grad():
            for dev, h in self.pairs:
                dev.copy_(h)


class SpyreProcessGroup(dist.ProcessGroup):
    """The c10d process group of backend "spyre": collectives on spyre (and CPU) tensors over a
    gloo process group on the same store."""

    def __init__(self, store: Any, rank: int, world_size: int, timeout: datetime.timedelta) -> None:
        super().__init__(rank, world_size)
        self._timeout = timeout
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore(GLOO_PREFIX, store), rank, world_size, timeout)
        self._group_name = ""
        self._group_desc = ""

    # --- identity (torch sets these on the group object after creating it) -------------------
    def getBackendName(self) -> str:
        return BACKEND_NAME

    def name(self) -> str:
        return BACKEND_NAME

    def _set_group_name(self, name: str) -> None:
        self._group_name = name

    def _set_group_desc(self, desc: str) -> None:
        self._group_desc = desc

    def getGroupName(self) -> str:
        return self._group_name

    def getGroupDesc(self) -> str:
        return self._group_desc

    @property
    def group_name(self) -> str:
        return self._group_name

    @property
    def group_desc(self) -> str:
        return self._group_desc

    @property
    def gloo(self) -> Any:
        """The gloo process group that moves the data."""
        return self._gloo

    # --- checks -------------------------------------------------------------------------------
    def _agree(self, kind: str, tensors: Sequence[torch.Tensor]) -> None:
        """Every rank calls ``kind`` with the same shapes and dtypes, else ValueError everywhere."""
        if self.size() == 1:
            return
        desc = [sum(map(ord, kind)), len(tensors)]
        for t in tensors:
            if t.dim() > _MAX_DIMS:
                raise Unsupported(f"{kind} on a tensor of rank {t.dim()} (at most {_MAX_DIMS})")
            desc += [_DTYPE_CODES.get(t.dtype, -2), t.dim()] + list(t.shape) + [-1] * (_MAX_DIMS - t.dim())
        mine = torch.tensor(desc, dtype=torch.int64)
        width = torch.tensor([mine.numel()], dtype=torch.int64)
        widths = [torch.empty_like(width) for _ in range(self.size())]
        self._gloo.allgather([widths], [width]).wait()
        if len({int(w) for w in widths}) != 1:
            counts = ", ".join(f"rank {r}: {(int(w) - 2) // (_MAX_DIMS + 2)}" for r, w in enumerate(widths))
            raise ValueError(f"spyre c10d: the ranks called {kind} with different numbers of tensors "
                             f"({counts})")
        everyone = [torch.empty_like(mine) for _ in range(self.size())]
        self._gloo.allgather([everyone], [mine]).wait()
        if any(not torch.equal(e, everyone[0]) for e in everyone):
            what = "; ".join(f"rank {r}: {_describe(e.tolist())}" for r, e in enumerate(everyone))
            raise ValueError(f"spyre c10d: the ranks called {kind} with different shapes or dtypes "
                             f"({what}); every rank must pass the same")

    @staticmethod
    def _dtype_ok(kind: str, tensors: Sequence[torch.Tensor]) -> None:
        for t in tensors:
            if t.dtype not in _DTYPE_CODES or t.dtype == torch.float8_e4m3fn:
                raise Unsupported(f"{kind} on {t.dtype} tensors")

    # --- reductions -----------------------------------------------------------------------------
    def _reduce_op(self, kind: str, op: Any, tensors: Sequence[torch.Tensor]) -> tuple[Any, float]:
        """The gloo ReduceOp for ``op`` and the divisor AVG needs afterwards (1 otherwise)."""
        name = _red_name(op)
        if name == "AVG":
            if any(not t.is_floating_point() for t in tensors):
                raise Unsupported(f"{kind} with ReduceOp.AVG on integer tensors")
            return dist.ReduceOp.SUM, float(self.size())
        if name in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
            return getattr(dist.ReduceOp, name), 1.0
        raise Unsupported(f"{kind} with ReduceOp.{name}")

    def _staged(self, stage: _Stage, inner: Any, outputs: list, divisor: float = 1.0,
                divide: Sequence[torch.Tensor] = ()) -> _StagedWork:
        def finish() -> None:
            if divisor != 1.0:
                for h in divide:
                    h.div_(divisor)
            stage.write_back()

        return _StagedWork(inner, finish, lambda: outputs)

    def allreduce(self, tensors: list, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.AllreduceOptions()
        self._dtype_ok("all_reduce", tensors)
        op, divisor = self._reduce_op("all_reduce", opts.reduceOp, tensors)
        self._agree("all_reduce", tensors)
        stage = _Stage()
        hosts = [stage.host(t) for t in tensors]
        gopts = dist.AllreduceOptions()
        gopts.reduceOp = op
        gopts.timeout = opts.timeout
        collective_stats.add("all_reduce", tensors, self.size())
        return self._staged(stage, self._gloo.allreduce(hosts, gopts), tensors, divisor, hosts)

    def reduce(self, tensors: list, opts: Any) -> dist.Work:
        self._dtype_ok("reduce", tensors)
        op, divisor = self._reduce_op("reduce", opts.reduceOp, tensors)
        self._agree("reduce", tensors)
        stage = _Stage()
        hosts = [stage.host(t) for t in tensors]
        gopts = dist.ReduceOptions()
        gopts.reduceOp, gopts.rootRank, gopts.rootTensor = op, opts.rootRank, opts.rootTensor
        gopts.timeout = opts.timeout
        divide = hosts if self.rank() == opts.rootRank else []
        collective_stats.add("reduce", tensors, self.size())
        return self._staged(stage, self._gloo.reduce(hosts, gopts), tensors, divisor, divide)

    def reduce_scatter(self, outputs: list, input_lists: list, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        flat_in = [t for ts in input_lists for t in ts]
        self._dtype_ok("reduce_scatter", outputs + flat_in)
        op, divisor = self._reduce_op("reduce_scatter", opts.reduceOp, outputs)
        self._agree("reduce_scatter", outputs + flat_in)
        stage = _Stage()
        h_out = [stage.host_out(t) for t in outputs]
        h_in = [[stage.host(t) for t in ts] for ts in input_lists]
        gopts = dist.ReduceScatterOptions()
        gopts.reduceOp, gopts.timeout = op, opts.timeout
        collective_stats.add("reduce_scatter", flat_in, self.size())
        return self._staged(stage, self._gloo.reduce_scatter(h_out, h_in, gopts), outputs, divisor, h_out)

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        self._dtype_ok("reduce_scatter_tensor", [output, input])
        if input.numel() != output.numel() * self.size():
            raise ValueError(f"spyre c10d: reduce_scatter_tensor input has {input.numel()} elements, "
                             f"expected output size {output.numel()} x world size {self.size()}")
        op, divisor = self._reduce_op("reduce_scatter_tensor", opts.reduceOp, [output])
        self._agree("reduce_scatter_tensor", [output, input])
        stage = _Stage()
        h_out, h_in = stage.host_out(output), stage.host(input)
        gopts = dist.ReduceScatterOptions()
        gopts.reduceOp, gopts.timeout = op, opts.timeout
        collective_stats.add("reduce_scatter", [input], self.size())
        inner = self._gloo._reduce_scatter_base(h_out, h_in, gopts)
        return self._staged(stage, inner, [output], divisor, [h_out])

    # --- data movement --------------------------------------------------------------------------
    def broadcast(self, tensors: list, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.BroadcastOptions()
        self._dtype_ok("broadcast", tensors)
        self._agree("broadcast", tensors)
        stage = _Stage()
        root = self.rank() == opts.rootRank
        hosts = [stage.host(t, read=root) for t in tensors]
        collective_stats.add("broadcast", tensors, self.size())
        return self._staged(stage, self._gloo.broadcast(hosts, opts), tensors)

    def allgather(self, output_lists: list, inputs: list, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.AllgatherOptions()
        flat_out = [t for ts in output_lists for t in ts]
        self._dtype_ok("all_gather", inputs + flat_out)
        self._agree("all_gather", inputs)
        stage = _Stage()
        h_in = [stage.host(t) for t in inputs]
        h_out = [[stage.host_out(t) for t in ts] for ts in output_lists]
        collective_stats.add("all_gather", inputs, self.size())
        return self._staged(stage, self._gloo.allgather(h_out, h_in, opts), flat_out)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.AllgatherOptions()
        self._dtype_ok("all_gather_into_tensor", [output, input])
        if output.numel() != input.numel() * self.size():
            raise ValueError(f"spyre c10d: all_gather_into_tensor output has {output.numel()} elements, "
                             f"expected input size {input.numel()} x world size {self.size()}")
        self._agree("all_gather_into_tensor", [output, input])
        stage = _Stage()
        h_in, h_out = stage.host(input), stage.host_out(output)
        collective_stats.add("all_gather", [input], self.size())
        return self._staged(stage, self._gloo._allgather_base(h_out, h_in, opts), [output])

    def gather(self, output_lists: list, inputs: list, opts: Any) -> dist.Work:
        flat_out = [t for ts in output_lists for t in ts]
        self._dtype_ok("gather", inputs + flat_out)
        self._agree("gather", inputs)
        stage = _Stage()
        h_in = [stage.host(t) for t in inputs]
        h_out = [[stage.host_out(t) for t in ts] for ts in output_lists]
        collective_stats.add("gather", inputs, self.size())
        return self._staged(stage, self._gloo.gather(h_out, h_in, opts), flat_out)

    def scatter(self, outputs: list, input_lists: list, opts: Any) -> dist.Work:
        flat_in = [t for ts in input_lists for t in ts]
        self._dtype_ok("scatter", outputs + flat_in)
        self._agree("scatter", outputs)
        stage = _Stage()
        h_out = [stage.host_out(t) for t in outputs]
        h_in = [[stage.host(t) for t in ts] for ts in input_lists]
        collective_stats.add("scatter", outputs, self.size())
        return self._staged(stage, self._gloo.scatter(h_out, h_in, opts), outputs)

    def alltoall_base(self, output: torch.Tensor, input: torch.Tensor, output_split_sizes: list,
                      input_split_sizes: list, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.AllToAllOptions()
        self._dtype_ok("all_to_all_single", [output, input])
        stage = _Stage()
        h_in, h_out = stage.host(input), stage.host_out(output)
        collective_stats.add("all_to_all", [input], self.size())
        inner = self._gloo.alltoall_base(h_out, h_in, output_split_sizes, input_split_sizes, opts)
        return self._staged(stage, inner, [output])

    def alltoall(self, outputs: list, inputs: list, opts: Any = None) -> dist.Work:
        """Gloo has no list all_to_all: one all_to_all_single over the concatenated tensors."""
        opts = opts if opts is not None else dist.AllToAllOptions()
        self._dtype_ok("all_to_all", outputs + inputs)
        if len({t.dtype for t in outputs + inputs}) > 1:
            raise ValueError("spyre c10d: all_to_all needs one dtype for every input and output tensor")
        stage = _Stage()
        h_in = torch.cat([stage.host(t).reshape(-1) for t in inputs])
        h_outs = [stage.host_out(t) for t in outputs]
        h_flat = torch.empty(sum(t.numel() for t in outputs), dtype=h_in.dtype)
        collective_stats.add("all_to_all", inputs, self.size())
        inner = self._gloo.alltoall_base(h_flat, h_in, [t.numel() for t in outputs],
                                         [t.numel() for t in inputs], opts)

        def finish() -> None:
            for h, part in zip(h_outs, torch.split(h_flat, [t.numel() for t in outputs])):
                h.copy_(part.view(h.shape))
            stage.write_back()

        return _StagedWork(inner, finish, lambda: outputs)

    # torch 2.13's names for the single-tensor forms (dist.all_gather_into_tensor,
    # reduce_scatter_tensor and all_to_all_single call these).
    all_gather_single = _allgather_base
    reduce_scatter_single = _reduce_scatter_base
    all_to_all_single = alltoall_base

    def allreduce_coalesced(self, tensors: list, opts: Any = None) -> dist.Work:
        """``all_reduce_coalesced``: one all_reduce per tensor, waited together."""
        one = dist.AllreduceOptions()
        if opts is not None:
            one.reduceOp, one.timeout = opts.reduceOp, opts.timeout
        works = [self.allreduce([t], one) for t in tensors]

        def finish() -> None:
            for w in works:
                w.wait()

        return _StagedWork(None, finish, lambda: tensors)

    def send(self, tensors: list, dst: int, tag: int) -> dist.Work:
        stage = _Stage()
        hosts = [stage.host(t) for t in tensors]
        collective_stats.add("send", tensors, self.size())
        return _StagedWork(self._gloo.send(hosts, dst, tag), lambda: None, lambda: tensors)

    def recv(self, tensors: list, src: int, tag: int) -> dist.Work:
        stage = _Stage()
        hosts = [stage.host_out(t) for t in tensors]
        return self._staged(stage, self._gloo.recv(hosts, src, tag), tensors)

    def recv_anysource(self, tensors: list, tag: int) -> dist.Work:
        stage = _Stage()
        hosts = [stage.host_out(t) for t in tensors]
        return self._staged(stage, self._gloo.recv_anysource(hosts, tag), tensors)

    def barrier(self, opts: Any = None) -> dist.Work:
        bopts = dist.BarrierOptions()
        if opts is not None:
            bopts.timeout = opts.timeout
        collective_stats.add("barrier", [], self.size())
        return _StagedWork(self._gloo.barrier(bopts), lambda: None, lambda: [])

    def monitored_barrier(self, timeout: Any = None, wait_all_ranks: bool = False) -> None:
        self._gloo.monitored_barrier(timeout if timeout is not None else self._timeout, wait_all_ranks)

    def shutdown(self) -> None:
        self._gloo.shutdown()

    def abort(self) -> None:
        self._gloo.abort()


def _create(store: Any, rank: int, world_size: int, timeout: datetime.timedelta) -> SpyreProcessGroup:
    return SpyreProcessGroup(store, rank, world_size, timeout)


_registered = False


def register_backend() -> None:
    """Registers the c10d backend "spyre" (and torch-spyre's "spyreccl", the same backend) for
    the devices "cpu" and "spyre"; the default backend of device "spyre" is "spyreccl", as in
    torch-spyre. Idempotent."""
    global _registered
    if _registered or not dist.is_available():
        return
    for name in (BACKEND_NAME, *BACKEND_ALIASES):  # the last one becomes spyre's default
        if name.upper() not in dist.Backend._plugins:
            dist.Backend.register_backend(name, _create, devices=["cpu", "spyre"])
    dist.Backend.default_device_backend_map["spyre"] = BACKEND_ALIASES[0]
    dist.Backend.default_device_backend_map.setdefault("cpu", "gloo")
    _registered = True
