"""The shared half of the ATen op -> Spyre graph IR translation (``_lowering``): the IR's
dtype and attribute spelling, ``Lowered`` (one ATen call as IR nodes), ``Env`` (how a lowering
sees its operands), the lowering registry (``_reg``), and the IR text of a lowering or of a
one-node graph checked by the C++ side (``check_text``). The lowerings themselves live in
``_lowering_arith`` and ``_lowering_data``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import _config
from . import _decompositions  # noqa: F401  (defines the torch.ops.spyre custom ops lowered here)
from ._errors import Unsupported
from ._lru import LruCache
from ._registry import registrar

aten = torch.ops.aten


_DTYPES = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.uint8: "u8",
}


def ir_dtype(dtype: torch.dtype, where: str = "") -> str:
    if dtype not in _DTYPES:
        raise Unsupported(f"dtype {dtype}" + (f" at {where}" if where else ""))
    return _DTYPES[dtype]


def type_text(shape: Any, dtype: torch.dtype, where: str = "") -> str:
    dims = []
    for s in shape:
        if not isinstance(s, int):
            raise Unsupported(f"dynamic shape {tuple(shape)}" + (f" at {where}" if where else "")
                              + "; compile with dynamic=False")
        dims.append(str(int(s)))
    return f"{ir_dtype(dtype, where)}[{', '.join(dims)}]"


def _num(v: float) -> str:
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0 and math.copysign(1.0, v) < 0:
        return "-0.0"  # x + (-0.0) keeps x = -0.0 negative; "0" would not
    return repr(v) if v != int(v) or abs(v) >= 1e16 else str(int(v))


@dataclass(frozen=True)
class RuntimeScalar:
    """An attribute whose value is passed when the compiled graph runs (``$index`` in the IR:
    the graph's runtime scalar ``index``), so one compile serves every value."""

    index: int


def format_attr(v: Any) -> str:
    if isinstance(v, RuntimeScalar):
        return f"${v.index}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_num(x) for x in v) + "]"
    return _num(v)


@dataclass(frozen=True)
class Tmp:
    """Reference to the result of an earlier node of the same lowering."""

    index: int


@dataclass
class Lowered:
    """One ATen call as IR nodes. Operands are tensor operands of the ATen call (the objects the
    caller passed: fx.Nodes or tensors) or ``Tmp(i)``; the last node produces the result.
    Helper nodes (all but the last) are elementwise with the type of their first operand."""

    nodes: list[tuple[str, list[Any], dict[str, Any]]] = field(default_factory=list)
    #: helper node index -> its dtype where it is not its first operand's (a to_dtype cast)
    dtypes: dict[int, torch.dtype] = field(default_factory=dict)
    #: helper node index -> its shape where it is not its first operand's (a matmul)
    shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def add(self, op: str, operands: list[Any], **attrs: Any) -> Tmp:
        self.nodes.append((op, list(operands), {k: v for k, v in attrs.items() if v is not None}))
        return Tmp(len(self.nodes) - 1)

    def cast(self, x: Any, dtype: torch.dtype) -> Tmp:
        """A helper node converting x to dtype (IR to_dtype; its shape is x's)."""
        t = self.add("to_dtype", [x])
        self.dtypes[t.index] = dtype
        return t

    def operands(self) -> list[Any]:
        """The distinct non-Tmp operands, in first-use order."""
        seen: list[Any] = []
        for _, ops, _ in self.nodes:
            for o in ops:
                if not isinstance(o, Tmp) and not any(o is s for s in seen):
                    seen.append(o)
        return seen


class Env:
    """How a lowering sees operands: ``tensor(x)`` -> (shape, dtype) or None for non-tensors;
    ``constant(x)`` -> a Python number for compile-time constants (numbers, 0-d constant
    tensors) or None."""

    def tensor(self, x: Any) -> tuple[tuple[int, ...], torch.dtype] | None:  # pragma: no cover
        raise NotImplementedError

    def constant(self, x: Any) -> float | None:  # pragma: no cover
        raise NotImplementedError


def bind_arguments(op: torch._ops.OpOverload, args: tuple, kwargs: dict, *,
                   fill_defaults: bool = True) -> dict[str, Any]:
    """The call's arguments by schema name. With ``fill_defaults`` every argument is present (its
    default, or None); without, only those the caller passed."""
    out: dict[str, Any] = {}
    pos = 0
    for a in op._schema.arguments:
        if not a.kwarg_only and pos < len(args):
            out[a.name] = args[pos]
            pos += 1
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif fill_defaults:
            out[a.name] = a.default_value if a.has_default_value() else None
    return out


_bind = bind_arguments


def _scalar_value(env: Env, x: Any, what: str) -> float:
    c = env.constant(x)
    if c is None:
        raise Unsupported(f"{what} must be a constant number, got {_describe(env, x)}")
    return c


def _describe(env: Env, x: Any) -> str:
    t = env.tensor(x)
    if t is not None:
        return f"a {'x'.join(map(str, t[0])) or '0-d'} tensor"
    return repr(x)


_LOWERINGS: dict[Any, Callable[[Env, dict], Lowered]] = {}
_reg = registrar(_LOWERINGS)


def _alpha(env: Env, b: dict) -> float:
    a = b.get("alpha", 1)
    return 1.0 if a is None else _scalar_value(env, a, "alpha")


def _is_operand(env: Env, x: Any) -> bool:
    """A tensor operand that stays a tensor in the IR (0-d constants become attributes)."""
    return env.tensor(x) is not None and env.constant(x) is None


def _unary(env: Env, op: str, x: Any, **attrs: Any) -> Lowered:
    if not _is_operand(env, x):
        raise Unsupported(f"{op} of {_describe(env, x)}")
    L = Lowered()
    L.add(op, [x], **attrs)
    return L


def is_lowerable(op: Any) -> bool:
    """True if ``op`` has an IR spelling (whether C++ compiles it is check_text's business)."""
    return op in _LOWERINGS


def lowerable_ops() -> list[Any]:
    """The ATen overloads with a lowering that eager mode may run as kernels: spyre:: custom ops
    only appear in traced graphs, and view ops (slice, expand) must stay views in eager mode;
    only compiled graphs materialise them."""
    return [op for op in _LOWERINGS
            if op.namespace == "aten" and not op.is_view and op is not aten._unsafe_view.default
            and op not in _COMPILE_ONLY]


def lower(op: Any, args: tuple, kwargs: dict, env: Env) -> Lowered:
    """The IR nodes for one ATen call; raises Unsupported if the call has no IR spelling."""
    fn = _LOWERINGS.get(op)
    if fn is None:
        raise Unsupported(f"op {op} has no spyre graph IR lowering")
    return fn(env, _bind(op, args, kwargs))


def node_lines(L: Lowered, name_of: Callable[[Any], str], out_name: str, out_type: str,
               type_of: Callable[[Any], str]) -> list[str]:
    """IR text lines for a lowering. ``name_of(operand)`` gives a value name (without %),
    ``type_of(operand)`` its type text; the last node is named ``out_name``."""
    lines = []
    tmp_names: list[str] = []
    tmp_types: list[str] = []
    for i, (op, operands, attrs) in enumerate(L.nodes):
        last = i == len(L.nodes) - 1
        name = out_name if last else f"{out_name}_t{i}"
        parts = []
        for o in operands:
            parts.append("%" + (tmp_names[o.index] if isinstance(o, Tmp) else name_of(o)))
        for k in sorted(attrs):
            parts.append(f"{k}={format_attr(attrs[k])}")
        if last:
            ty = out_type
        else:
            first = operands[0]
            ty = tmp_types[first.index] if isinstance(first, Tmp) else type_of(first)
            if i in L.dtypes:
                ty = ir_dtype(L.dtypes[i]) + ty[ty.index("["):]
            if i in L.shapes:
                ty = ty[:ty.index("[")] + "[" + ", ".join(str(d) for d in L.shapes[i]) + "]"
        tmp_names.append(name)
        tmp_types.append(ty)
        lines.append(f"  %{name} = {op}({', '.join(parts)}) : {ty}")
    return lines


_check_cache = LruCache(_config.eager_cache_size)


def check_text(text: str) -> str:
    """'' if the C++ side compiles this graph, else its reason. Cached (LRU, bounded by
    SPYRE_EAGER_CACHE_SIZE) by the text, which spells out op, shapes, dtypes and attributes."""
    from . import _C

    _config.check_compile()  # an invalid knob of the C++ compile path is an error, not a reason
    key = f"{_C.sencores()}\n{text}"  # raises for an invalid SENCORES: a setup error, not a fallback
    hit = _check_cache.get(key)
    if hit is not None:
        return hit
    reason = _C.check_graph(text)
    _check_cache.put(key, reason)
    return reason


def single_node_text(L: Lowered, types: dict[int, str], out_type: str) -> str:
    """A one-ATen-node graph: inputs %x0.. (the lowering's operands, typed by ``types``, keyed
    by id of the operand), the lowered nodes, and return of the last one."""
    ops = L.operands()
    names = {id(o): f"x{i}" for i, o in enumerate(ops)}
    params = ", ".join(f"%x{i}: {types[id(o)]}" for i, o in enumerate(ops))
    lines = node_lines(L, lambda o: names[id(o)], "out", out_type, lambda o: types[id(o)])
    return "graph(" + params + ") {\n" + "\n".join(lines) + "\n  return (%out)\n}\n"


# Lowerings that eager mode must not take over: factories (their device comes from kwargs and
# the native empty + fill already runs on the card).
_COMPILE_ONLY = {aten.arange.default, aten.arange.start, aten.arange.start_step, aten.full.default, aten.full_like.default, aten.zeros.default, aten.zeros_like.default,
                 aten.ones.default, aten.ones_like.default}
