"""Eager mode: ATen ops on spyre tensors run on the simulated card as single-op compiled graphs.

* Every overload with a graph IR lowering (``_lowering``) gets a PrivateUse1 kernel that builds
  the one-node IR text directly (no dynamo), asks ``_C.check_graph`` and runs a cached
  ``_C.CompiledGraph``. The cache key is the IR text, which spells out op, shapes and dtypes;
  Python scalars of float ops (``a * s``, ``a + s``, clamp bounds, ``where`` with a number) are
  runtime scalars (``$k`` in the IR, passed to ``run``), so one kernel serves every value.
  Inputs in other layouts or views are restaged by ``CompiledGraph.run``, so layouts need not
  be part of the key. The caches are LRU, bounded by ``SPYRE_EAGER_CACHE_SIZE``; new kernels
  are dumped (``SPYRE_DUMP_DIR``) and logged (``SPYRE_DEBUG``) like compiled graphs.
* Ops we decompose (softmax, log_softmax, layer_norm, addmm, baddbmm) trace their decomposition
  once per signature and run it through the compiled path's partitioner.
* Everything else reaches one boxed PrivateUse1 fallback: in-place and ``out=`` variants of the
  ops above run their functional form on spyre and copy into the destination; the rest runs on
  the CPU (``_fallback.run_on_cpu``) with a ``FallbackWarning`` once per op, or raises
  ``Unsupported`` under ``SPYRE_STRICT=1``.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from . import _argscan, _config, _device_rules, _empty, _fallback
from ._decompositions import DECOMPOSITIONS
from ._errors import Unsupported, typed_device_faults
from ._lowering import (Env, Lowered, RuntimeScalar, bind_arguments, check_text, is_lowerable, lower, lowerable_ops,
                        single_node_text, type_text)
from ._lru import LruCache
from ._no_trace import no_trace

aten = torch.ops.aten

__all__ = ["register", "eager_stats"]


class _EagerStats:
    def __init__(self) -> None:
        self.compiled = 0  # single-op graphs compiled (cache misses)
        self.spyre_calls = 0  # op calls that ran on the card
        # IR text -> CompiledGraph, or the reason it does not compile (LRU)
        self.texts = LruCache(_config.eager_cache_size)


eager_stats = _EagerStats()
_lock = threading.Lock()


def _is_spyre(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "spyre"


class _EagerEnv(Env):
    """Spyre tensors are operands; numbers and 0-d CPU tensors (wrapped Python scalars) are
    constants."""

    def tensor(self, x: Any) -> tuple[tuple[int, ...], torch.dtype] | None:
        if _is_spyre(x) or (isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() == 0):
            return tuple(x.shape), x.dtype
        return None

    def constant(self, x: Any) -> float | None:
        if isinstance(x, (bool, int, float)):
            return float(x)
        if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() == 0 and \
                (x.is_floating_point() or x.dtype in (torch.bool, torch.int32, torch.int64)):
            return float(x.item())
        return None


_ENV = _EagerEnv()


def _meta(x: Any) -> Any:
    if _is_spyre(x):
        return torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device="meta")
    return x


def _compiled_for(text: str, op: Any) -> Any:
    """CompiledGraph for a one-node text, or the reason it does not compile (LRU-cached)."""
    from . import _C
    from ._build import _dump_dir, compile_text

    key = f"{_C.sencores()}\n{_config.engine()}\n{text}"
    hit = eager_stats.texts.get(key)
    if hit is not None:
        return hit
    reason = check_text(text)
    if reason:
        result: Any = reason
    else:
        result = compile_text(text, _dump_dir(), eager_op=str(op))
        with _lock:
            eager_stats.compiled += 1
    eager_stats.texts.put(key, result)
    return result


# Attributes the card reads at run time (SuperDSC constants with argIdx_, loaded from the
# launch's scalar-argument block): ops on float tensors take these Python numbers as kernel
# arguments instead of compiling one kernel per value.
_RUNTIME_ATTRS = {**{op: ("scalar",) for op in ("add", "sub", "mul", "div", "maximum", "minimum",
                                                 "eq", "ne", "lt", "le", "gt", "ge")},
                  "where": ("a", "b"), "clamp": ("min", "max")}
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.bool)


def runtime_scalars(L: Lowered, operands: list) -> list[float]:
    """Replaces the numbers of ``L``'s runtime-capable attributes by ``RuntimeScalar``s and
    returns their values, in ``$k`` order. Integer ops keep their numbers (no integer scalar
    arguments), and so does a NaN clamp bound: clip's NaN is not a DL16 value."""
    if any(o.dtype not in _FLOATS for o in operands):
        return []
    scalars: list[float] = []
    for name, _, attrs in L.nodes:
        for key in _RUNTIME_ATTRS.get(name, ()):
            v = attrs.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not (name == "clamp" and math.isnan(v)):
                attrs[key] = RuntimeScalar(len(scalars))
                scalars.append(float(v))
    return scalars


# (op, argscan.signature) -> the IR type of the op's result: torch's meta kernels are Python
# reference implementations for many ops (hundreds of microseconds for an add), and an op's
# result type depends only on what the signature records.
_result_types = LruCache(_config.eager_cache_size)


def _result_type(op: Any, args: tuple, kwargs: dict) -> str:
    sig = _argscan.signature(args, kwargs)
    key = None if sig is None else (op, sig)
    hit = None if key is None else _result_types.get(key)
    if hit is not None:
        return hit
    out = op(*tree_map(_meta, args), **tree_map(_meta, kwargs))
    if not isinstance(out, torch.Tensor):
        raise Unsupported(f"{op} returns {type(out).__name__}")
    text = type_text(out.shape, out.dtype)
    if key is not None:
        _result_types.put(key, text)
    return text


def _run_lowered(op: Any, args: tuple, kwargs: dict) -> Any:
    """Runs a lowerable op on the card; returns NotImplemented (and the reason) if it cannot."""
    try:
        lowered = lower(op, args, kwargs, _ENV)
        operands = lowered.operands()
        for o in operands:
            if not _is_spyre(o):
                raise Unsupported(f"operand on {o.device}")
        out_type = _result_type(op, args, kwargs)
        types = {id(o): type_text(o.shape, o.dtype) for o in operands}
        scalars = runtime_scalars(lowered, operands)
        text = single_node_text(lowered, types, out_type)
    except Unsupported as e:
        return NotImplemented, str(e)
    compiled = _compiled_for(text, op)
    if isinstance(compiled, str):
        return NotImplemented, compiled
    with _lock:
        eager_stats.spyre_calls += 1
    with typed_device_faults():
        return compiled.run(list(operands), scalars)[0], ""


def _checked_empty_result(op: Any, args: tuple, kwargs: dict) -> Any:
    """What every eager kernel does first: torch's same-device rule, then the result of an op
    with an empty operand (no kernel needed); NotImplemented when the op has to run."""
    flat = _argscan.leaves(args, kwargs)
    _device_rules.check_same_device(op, flat)
    return _empty.empty_result(op, args, kwargs, flat)


def _lowered_kernel(op: Any) -> Callable:
    @no_trace
    def kernel(*args: Any, **kwargs: Any) -> Any:
        out = _checked_empty_result(op, args, kwargs)
        if out is not NotImplemented:
            return out
        out, reason = _run_lowered(op, args, kwargs)
        if out is NotImplemented:
            _fallback.note_fallback(str(op), reason)
            return _fallback.run_on_cpu(op, args, kwargs)
        return out

    return kernel


_decomp_cache = LruCache(_config.eager_cache_size)


def _unmeta_factories(gm: torch.fx.GraphModule, device: torch.device) -> None:
    """Tensors a decomposition creates (``where(c, 1.0, x)`` traces to a ``scalar_tensor``)
    were traced on the meta device; at run time they belong on the operands' device."""
    changed = False
    for node in gm.graph.nodes:
        d = node.kwargs.get("device")
        if node.op == "call_function" and isinstance(d, torch.device) and d.type == "meta":
            node.kwargs = {**node.kwargs, "device": device}
            changed = True
    if changed:
        gm.recompile()


class _Declined(Exception):
    """A decomposition returned NotImplemented while tracing: the op runs as torch's kernel."""


def _decomposed_kernel(op: Any, decomp: Callable) -> Callable:
    @no_trace
    def kernel(*args: Any, **kwargs: Any) -> Any:
        out = _checked_empty_result(op, args, kwargs)
        if out is not NotImplemented:
            return out
        from torch.fx.experimental.proxy_tensor import make_fx

        from ._compile import _compile_aten_graph

        flat, spec = tree_flatten((args, kwargs))
        pos = [i for i, a in enumerate(flat) if isinstance(a, torch.Tensor)]
        key = (op, spec, tuple((tuple(a.shape), a.dtype, a.device.type) if isinstance(a, torch.Tensor)
                               else (type(a).__name__, repr(a)) for a in flat))
        entry = _decomp_cache.get(key)
        if entry is None:
            def traced(*ts: torch.Tensor) -> Any:
                f = list(flat)
                for i, t in zip(pos, ts):
                    f[i] = t
                a, k = tree_unflatten(f, spec)
                out = decomp(*a, **k)
                if out is NotImplemented:  # a form the decomposition leaves to torch's kernel
                    raise _Declined
                return out

            metas = [_meta(flat[i]) for i in pos]
            try:
                gm = make_fx(traced)(*metas)
            except _Declined:
                entry = (None, False)
            else:
                _unmeta_factories(gm, next(flat[i].device for i in pos))
                single = not isinstance(gm.graph.output_node().args[0], (tuple, list))
                entry = (_compile_aten_graph(gm, metas), single)
            _decomp_cache.put(key, entry)
        fn, single = entry
        if fn is None:
            _fallback.note_fallback(str(op), "no spyre kernel for this form")
            return _fallback.run_on_cpu(op, args, kwargs)
        out = fn(*[flat[i] for i in pos])
        if single and isinstance(out, (tuple, list)):
            return out[0]
        return tuple(out) if isinstance(out, list) else out

    return kernel


@no_trace
def _arange_out(start: Any, end: Any, step: Any = 1, *, out: torch.Tensor) -> torch.Tensor:
    """``torch.arange(.., device="spyre")`` (torch's factory fills an ``arange.start_out``
    destination): the frontend's ``arange`` (a fill, a cumsum and an add, fp32 or int32) as an
    eager kernel, then copied into ``out`` (generate()'s position bookkeeping)."""
    op = aten.arange.start_out
    n = torch.arange(start, end, step, dtype=out.dtype, device="meta").shape
    if tuple(out.shape) != tuple(n):
        out.resize_(n)
    if out.numel() == 0:
        return out
    L = Lowered()
    L.add("arange", [], start=float(start), step=float(step))
    text = single_node_text(L, {}, type_text(n, out.dtype))
    compiled = _compiled_for(text, op)
    if isinstance(compiled, str):
        _fallback.note_fallback(str(op), compiled)
        return _fallback.run_on_cpu(op, (start, end, step), {"out": out})
    with _lock:
        eager_stats.spyre_calls += 1
    out.copy_(compiled.run([], [])[0])
    return out


# ---- the boxed fallback --------------------------------------------------------------------

_functional_cache: dict[Any, Any] = {}


def _has_spyre_kernel(op: Any) -> bool:
    return is_lowerable(op) or op in _DECOMPOSED


def _functional_of(op: Any) -> Any:
    """The functional overload of an in-place or out= overload we have a spyre kernel for."""
    if op in _functional_cache:
        return _functional_cache[op]
    result = None
    schema = op._schema
    base = schema.name.split("::")[-1]
    writes = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if writes:
        inplace = base.endswith("_") and not base.endswith("__")
        fbase = base[:-1] if inplace else base
        packet = getattr(aten, fbase, None)
        # in-place: the same arguments (self is written); out=: the arguments minus the outs
        want = [(a.name, str(a.type)) for a in schema.arguments
                if inplace or not (a.alias_info and a.alias_info.is_write)]
        for name in packet.overloads() if packet is not None else []:
            cand = getattr(packet, name)
            if not _has_spyre_kernel(cand):
                continue
            have = [(a.name, str(a.type)) for a in cand._schema.arguments]
            if inplace:
                if [n for n, _ in have] == [n for n, _ in want]:
                    result = cand
                    break
            elif have == want:
                result = cand
                break
    _functional_cache[op] = result
    return result


@no_trace
def _boxed_fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    _device_rules.check_same_device(op, _argscan.leaves(args, kwargs))
    fop = _functional_of(op)
    if fop is not None:
        bound = bind_arguments(op, args, kwargs, fill_defaults=False)
        writes = [a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        fnames = {a.name for a in fop._schema.arguments}
        res = fop(**{k: v for k, v in bound.items() if k in fnames})
        dst = bound[writes[0]]
        if len(writes) == 1 and isinstance(res, torch.Tensor) and _is_spyre(dst):
            if tuple(dst.shape) != tuple(res.shape):
                if dst.numel() != 0 and op._schema.name.split("::")[-1].endswith("_"):
                    raise RuntimeError(f"{op}: result shape {tuple(res.shape)} does not match the "
                                       f"in-place destination {tuple(dst.shape)}")
                dst.resize_(res.shape)
            dst.copy_(res)
            return dst
    if op.is_view:
        raise Unsupported(f"view op {op} on spyre tensors (it would lose aliasing on the CPU fallback)")
    _fallback.note_fallback(str(op), "no spyre kernel")
    return _fallback.run_on_cpu(op, args, kwargs)


_DECOMPOSED = [op for op in DECOMPOSITIONS if op not in (aten.rms_norm.default,) and
               not str(op).startswith("aten._fused_rms_norm")]
_libs: list = []


@functools.cache  # once per process
def register() -> None:
    """Registers the eager PrivateUse1 kernels and the boxed CPU fallback (idempotent)."""
    lib = torch.library.Library("aten", "IMPL", "PrivateUse1")
    for op in lowerable_ops():
        if op in (aten.matmul.default, aten.clone.default, aten._to_copy.default, aten.t.default,
                  aten.transpose.int, aten.permute.default):
            # t/transpose/permute are views in eager mode; only compiled graphs materialise them.
            # matmul is CompositeImplicitAutograd (it reaches us as mm/bmm and views); clone and
            # _to_copy are data movement the device's copy kernels already do for every dtype
            # and device pair (x.to("spyre") is a _to_copy); only compiled graphs lower casts.
            continue
        if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1"):
            continue
        lib.impl(op._schema.name.split("::")[-1] + (f".{op._overloadname}" if op._overloadname != "default" else ""),
                 _lowered_kernel(op))
    lib.impl("arange.start_out", _arange_out)
    # Deliberate overrides: functorch registers where.Scalar for every backend key, and our
    # decomposition replaces it; torch would warn about that on every process's first spyre op.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning only once for all operators")
        for op in _DECOMPOSED:
            lib.impl(op._schema.name.split("::")[-1] + (f".{op._overloadname}" if op._overloadname != "default" else ""),
                     _decomposed_kernel(op, DECOMPOSITIONS[op]))
    fb = torch.library.Library("_", "IMPL")
    fb.fallback(_boxed_fallback, "PrivateUse1")
    _libs.extend([lib, fb])
