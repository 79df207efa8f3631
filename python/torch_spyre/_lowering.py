"""ATen op -> Spyre graph IR translation, shared by the compiled path (_compile.py) and the
eager path (_eager.py).

The op contract lives in ``frontend/include/spyre/frontend/graph.h``. This module only knows
how each ATen overload is *spelled* in the IR (op name, operand order, attributes); whether the
C++ side can compile a node is never decided here: ``check_node`` builds a one-node graph and
asks ``_C.check_graph``, so ops start running on spyre as soon as the C++ side learns them.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import _decompositions  # noqa: F401  (defines the torch.ops.spyre custom ops lowered below)

aten = torch.ops.aten

__all__ = ["Unsupported", "FallbackWarning", "Tmp", "Lowered", "lower", "is_lowerable", "check_text",
           "ir_dtype", "type_text", "format_attr"]


class Unsupported(NotImplementedError):
    """Raised for graphs, ops or shapes the simulated Spyre stack does not support (yet)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"Unsupported: {what}")


class FallbackWarning(UserWarning):
    """An op ran on the CPU instead of the simulated card (once per op and reason)."""


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
    return repr(v) if v != int(v) or abs(v) >= 1e16 else str(int(v))


def format_attr(v: Any) -> str:
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

    def add(self, op: str, operands: list[Any], **attrs: Any) -> Tmp:
        self.nodes.append((op, list(operands), {k: v for k, v in attrs.items() if v is not None}))
        return Tmp(len(self.nodes) - 1)

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


def _bind(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pos = 0
    for a in op._schema.arguments:
        if not a.kwarg_only and pos < len(args):
            out[a.name] = args[pos]
            pos += 1
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out


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


def _reg(*ops: Any) -> Callable:
    def deco(fn: Callable) -> Callable:
        for op in ops:
            _LOWERINGS[op] = fn
        return fn

    return deco


def _alpha(env: Env, b: dict) -> float:
    a = b.get("alpha", 1)
    return 1.0 if a is None else _scalar_value(env, a, "alpha")


def _is_operand(env: Env, x: Any) -> bool:
    """A tensor operand that stays a tensor in the IR (0-d constants become attributes)."""
    return env.tensor(x) is not None and env.constant(x) is None


_SWAP = {"add": "add", "mul": "mul", "maximum": "maximum", "minimum": "minimum", "eq": "eq", "ne": "ne",
         "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}


def _binary(env: Env, op: str, a: Any, b: Any) -> Lowered:
    L = Lowered()
    if _is_operand(env, a) and _is_operand(env, b):
        L.add(op, [a, b])
    elif _is_operand(env, a):
        L.add(op, [a], scalar=_scalar_value(env, b, f"the second operand of {op}"))
    elif _is_operand(env, b) and op in _SWAP:
        L.add(_SWAP[op], [b], scalar=_scalar_value(env, a, f"the first operand of {op}"))
    else:
        raise Unsupported(f"{op} of {_describe(env, a)} and {_describe(env, b)}")
    return L


def _add_sub(env: Env, op: str, a: Any, other: Any, alpha: float) -> Lowered:
    if _is_operand(env, other):
        if alpha == 1:
            return _binary(env, op, a, other)
        L = Lowered()
        t = L.add("mul", [other], scalar=alpha)
        L.add(op, [a, t])
        return L
    return _binary(env, op, a, _scalar_value(env, other, f"the second operand of {op}") * alpha)


@_reg(aten.add.Tensor, aten.add.Scalar)
def _add(env: Env, b: dict) -> Lowered:
    return _add_sub(env, "add", b["self"], b["other"], _alpha(env, b))


@_reg(aten.sub.Tensor, aten.sub.Scalar)
def _sub(env: Env, b: dict) -> Lowered:
    return _add_sub(env, "sub", b["self"], b["other"], _alpha(env, b))


@_reg(aten.rsub.Tensor, aten.rsub.Scalar)
def _rsub(env: Env, b: dict) -> Lowered:
    # other - alpha * self
    x, other, alpha = b["self"], b["other"], _alpha(env, b)
    if _is_operand(env, other):
        return _add_sub(env, "sub", other, x, alpha)
    s = _scalar_value(env, other, "the first operand of rsub")
    L = Lowered()
    t = L.add("neg", [x]) if alpha == 1 else L.add("mul", [x], scalar=-alpha)
    L.add("add", [t], scalar=s)
    return L


def _simple_binary(op: str) -> Callable[[Env, dict], Lowered]:
    return lambda env, b: _binary(env, op, b["self"], b["other"])


for _name in ("mul", "div", "eq", "ne", "lt", "le", "gt", "ge"):
    for _ov in ("Tensor", "Scalar"):
        _reg(getattr(getattr(aten, _name), _ov))(_simple_binary(_name))
for _name in ("maximum", "minimum"):
    _reg(getattr(aten, _name).default)(_simple_binary(_name))


@_reg(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(env: Env, b: dict) -> Lowered:
    if b.get("rounding_mode") is not None:
        raise Unsupported(f"div with rounding_mode={b['rounding_mode']!r}")
    return _binary(env, "div", b["self"], b["other"])


@_reg(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(env: Env, b: dict) -> Lowered:
    cond, a, o = b["condition"], b["self"], b["other"]
    if not _is_operand(env, cond):
        raise Unsupported(f"where with a constant condition {_describe(env, cond)}")
    L = Lowered()
    operands = [cond]
    attrs = {}
    for key, x in (("a", a), ("b", o)):
        if _is_operand(env, x):
            operands.append(x)
        else:
            attrs[key] = _scalar_value(env, x, f"where's {key} operand")
    L.add("where", operands, **attrs)
    return L


_UNARY = ["neg", "abs", "relu", "floor", "sqrt", "rsqrt", "reciprocal", "exp", "log", "tanh", "sigmoid",
          "silu"]
for _name in _UNARY:
    _reg(getattr(aten, _name).default)(lambda env, b, _n=_name: _unary(env, _n, b["self"]))


def _unary(env: Env, op: str, x: Any, **attrs: Any) -> Lowered:
    if not _is_operand(env, x):
        raise Unsupported(f"{op} of {_describe(env, x)}")
    L = Lowered()
    L.add(op, [x], **attrs)
    return L


@_reg(aten.clone.default)
def _clone(env: Env, b: dict) -> Lowered:
    mf = b.get("memory_format")
    if mf not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported(f"clone with memory_format={mf}")
    return _unary(env, "clone", b["self"])


@_reg(aten.gelu.default)
def _gelu(env: Env, b: dict) -> Lowered:
    approx = {"none": 0, "tanh": 1}.get(b.get("approximate") or "none")
    if approx is None:
        raise Unsupported(f"gelu approximate={b['approximate']!r}")
    return _unary(env, "gelu", b["self"], approximate=approx)


@_reg(aten.softplus.default)
def _softplus(env: Env, b: dict) -> Lowered:
    return _unary(env, "softplus", b["self"], beta=_scalar_value(env, b["beta"], "softplus beta"),
                  threshold=_scalar_value(env, b["threshold"], "softplus threshold"))


def _opt_const(env: Env, x: Any, what: str) -> float | None:
    return None if x is None else _scalar_value(env, x, what)


@_reg(aten.clamp.default, aten.clamp.Tensor)
def _clamp(env: Env, b: dict) -> Lowered:
    lo, hi = _opt_const(env, b["min"], "clamp min"), _opt_const(env, b["max"], "clamp max")
    if lo is None and hi is None:
        raise Unsupported("clamp without min and max")
    return _unary(env, "clamp", b["self"], min=lo, max=hi)


@_reg(aten.clamp_min.default, aten.clamp_min.Tensor)
def _clamp_min(env: Env, b: dict) -> Lowered:
    return _unary(env, "clamp", b["self"], min=_scalar_value(env, b["min"], "clamp_min min"))


@_reg(aten.clamp_max.default, aten.clamp_max.Tensor)
def _clamp_max(env: Env, b: dict) -> Lowered:
    return _unary(env, "clamp", b["self"], max=_scalar_value(env, b["max"], "clamp_max max"))


@_reg(aten.hardtanh.default)
def _hardtanh(env: Env, b: dict) -> Lowered:
    return _unary(env, "clamp", b["self"], min=_scalar_value(env, b["min_val"], "hardtanh min_val"),
                  max=_scalar_value(env, b["max_val"], "hardtanh max_val"))


@_reg(aten.pow.Tensor_Scalar)
def _pow(env: Env, b: dict) -> Lowered:
    x, e = b["self"], _scalar_value(env, b["exponent"], "pow exponent")
    if not _is_operand(env, x):
        raise Unsupported(f"pow of {_describe(env, x)}")
    L = Lowered()
    if e == 1:
        L.add("clone", [x])
    elif e == 2:
        L.add("mul", [x, x])
    elif e == 3:
        L.add("mul", [L.add("mul", [x, x]), x])
    elif e == 0.5:
        L.add("sqrt", [x])
    elif e == -0.5:
        L.add("rsqrt", [x])
    elif e == -1:
        L.add("reciprocal", [x])
    else:
        raise Unsupported(f"pow with exponent {e} (spyre has 1, 2, 3, 0.5, -0.5, -1)")
    return L


@_reg(aten.square.default)
def _square(env: Env, b: dict) -> Lowered:
    return _pow(env, {"self": b["self"], "exponent": 2})


def _dims(env: Env, x: Any, dim: Any) -> list[int]:
    t = env.tensor(x)
    if t is None:
        raise Unsupported(f"reduction of {_describe(env, x)}")
    rank = len(t[0])
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(rank))
    dims = [dim] if isinstance(dim, int) else list(dim)
    norm = []
    for d in dims:
        r = max(rank, 1)
        if not -r <= d < r:
            raise Unsupported(f"reduction dim {d} of a rank-{rank} tensor")
        norm.append(d % r if rank else 0)
    if len(set(norm)) != len(norm):
        raise Unsupported(f"repeated reduction dims {dims}")
    return sorted(norm) if rank else []


def _reduction(env: Env, op: str, b: dict, dim_key: str | None) -> Lowered:
    x = b["self"]
    t = env.tensor(x)
    dtype = b.get("dtype")
    if dtype is not None and t is not None and dtype != t[1]:
        raise Unsupported(f"{op} with dtype={dtype} of a {t[1]} tensor")
    dims = _dims(env, x, b.get(dim_key) if dim_key else None)
    keepdim = bool(b.get("keepdim", False)) if dim_key else False
    return _unary(env, op, x, dims=dims, keepdim=int(keepdim))


_reg(aten.sum.dim_IntList)(lambda env, b: _reduction(env, "sum", b, "dim"))
_reg(aten.sum.default)(lambda env, b: _reduction(env, "sum", b, None))
_reg(aten.mean.dim)(lambda env, b: _reduction(env, "mean", b, "dim"))
_reg(aten.mean.default)(lambda env, b: _reduction(env, "mean", b, None))
_reg(aten.amax.default)(lambda env, b: _reduction(env, "amax", b, "dim"))
_reg(aten.amin.default)(lambda env, b: _reduction(env, "amin", b, "dim"))


@_reg(aten.mm.default, aten.bmm.default, aten.matmul.default)
def _matmul(env: Env, b: dict) -> Lowered:
    x, y = b["self"], b.get("mat2", b.get("other"))
    if not (_is_operand(env, x) and _is_operand(env, y)):
        raise Unsupported(f"matmul of {_describe(env, x)} and {_describe(env, y)}")
    L = Lowered()
    L.add("matmul", [x, y])
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
        tmp_names.append(name)
        tmp_types.append(ty)
        lines.append(f"  %{name} = {op}({', '.join(parts)}) : {ty}")
    return lines


_check_cache: dict[str, str] = {}
_check_lock = threading.Lock()


def check_text(text: str) -> str:
    """'' if the C++ side compiles this graph, else its reason. Cached by the text, which
    spells out op, shapes, dtypes and attributes."""
    from . import _C

    key = f"{_C.sencores()}\n{text}"  # raises for an invalid SENCORES: a setup error, not a fallback
    with _check_lock:
        hit = _check_cache.get(key)
    if hit is not None:
        return hit
    reason = _C.check_graph(text)
    with _check_lock:
        _check_cache[key] = reason
    return reason


def single_node_text(L: Lowered, types: dict[int, str], out_type: str) -> str:
    """A one-ATen-node graph: inputs %x0.. (the lowering's operands, typed by ``types``, keyed
    by id of the operand), the lowered nodes, and return of the last one."""
    ops = L.operands()
    names = {id(o): f"x{i}" for i, o in enumerate(ops)}
    params = ", ".join(f"%x{i}: {types[id(o)]}" for i, o in enumerate(ops))
    lines = node_lines(L, lambda o: names[id(o)], "out", out_type, lambda o: types[id(o)])
    return "graph(" + params + ") {\n" + "\n".join(lines) + "\n  return (%out)\n}\n"


_FLOATS = (torch.float16, torch.bfloat16, torch.float32)


@_reg(aten._to_copy.default)
def _to_copy(env: Env, b: dict) -> Lowered:
    """A dtype cast between fp16/bf16 and fp32 on the device (dl16tofp32 / fp32todl16)."""
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
    if src[1] not in _FLOATS or dtype not in _FLOATS:
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


@_reg(aten.full.default, aten.full_like.default)
def _full(env: Env, b: dict) -> Lowered:
    return _fill(env, b, b["fill_value"])


@_reg(aten.zeros.default, aten.zeros_like.default)
def _zeros(env: Env, b: dict) -> Lowered:
    return _fill(env, b, 0.0)


@_reg(aten.ones.default, aten.ones_like.default)
def _ones(env: Env, b: dict) -> Lowered:
    return _fill(env, b, 1.0)


# Lowerings that eager mode must not take over: factories (their device comes from kwargs and
# the native empty + fill already runs on the card).
_COMPILE_ONLY = {aten.full.default, aten.full_like.default, aten.zeros.default, aten.zeros_like.default,
                 aten.ones.default, aten.ones_like.default}
