"""Lowerings of the arithmetic ATen ops: binary and unary pointwise ops, clamps, pow,
reductions and matmul (registered into ``_lowering_core``'s table on import)."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ._errors import Unsupported
from ._lowering_core import _LOWERINGS, Env, Lowered, _alpha, _describe, _is_operand, _reg, _scalar_value, _unary

aten = torch.ops.aten


_SWAP = {"add": "add", "mul": "mul", "maximum": "maximum", "minimum": "minimum", "eq": "eq", "ne": "ne",
         "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}


_INTS = (torch.int32, torch.int64)
_CARD_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int64, torch.bool)


def _same_on_card(x: torch.dtype, y: torch.dtype) -> bool:
    """int64 lives as int32 on the card: the two need no cast between them."""
    return x == y or (x in _INTS and y in _INTS)


def _promoted(env: Env, L: Lowered, op: str, a: Any, b: Any) -> tuple[Any, Any]:
    """Mixed-dtype tensor operands promote as torch does (``torch.result_type``: a 0-d operand
    does not widen a dimensioned one of its category; bool < int < float): f16 with f32 (T5's
    norm), bool with int (generate()'s ``next_tokens * unfinished``), int with float. The
    operands not of the result type are cast first (to_dtype kernels on the card); a
    comparison compares in the promoted type. ``div`` of integers divides in the default float
    dtype, as torch's true division."""
    ta, tb = env.tensor(a), env.tensor(b)
    if ta[1] not in _CARD_DTYPES or tb[1] not in _CARD_DTYPES:
        return a, b  # int8 / fp8: the frontend names the dtype
    wide = torch.result_type(torch.empty(ta[0], dtype=ta[1], device="meta"),
                             torch.empty(tb[0], dtype=tb[1], device="meta"))
    if op == "div" and not wide.is_floating_point:
        wide = torch.get_default_dtype()
    return tuple(x if _same_on_card(t, wide) else L.cast(x, wide) for x, t in ((a, ta[1]), (b, tb[1])))


def _binary(env: Env, op: str, a: Any, b: Any) -> Lowered:
    L = Lowered()
    if _is_operand(env, a) and _is_operand(env, b):
        a, b = _promoted(env, L, op, a, b)
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


def _bitwise(op: str) -> Callable[[Env, dict], Lowered]:
    """bitwise_and / or / xor: int32 / int64 operands (bool promoted to int as torch does) run
    the int32-only IR ops (and / or / xor on the SFP); two bool masks are logical: and is
    minimum, or is maximum, xor is ne (exact on 0 / 1)."""
    logical = {"bitwise_and": "minimum", "bitwise_or": "maximum", "bitwise_xor": "ne"}[op]

    def lowering(env: Env, b: dict) -> Lowered:
        x, y = b["self"], b["other"]
        tx, ty = env.tensor(x), env.tensor(y)
        if _is_operand(env, x) and tx[1] == torch.bool and (ty is None or ty[1] == torch.bool or
                                                            isinstance(y, bool)):
            return _binary(env, logical, x, y)
        for t in (tx, ty):
            if t is not None and t[1] not in _INTS + (torch.bool,):
                raise Unsupported(f"{op} of a {t[1]} tensor (integer or bool only)")
        return _binary(env, op, x, y)

    return lowering


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    for _ov in ("Tensor", "Scalar"):
        _reg(getattr(getattr(aten, _name), _ov))(_bitwise(_name))
_SWAP.update(bitwise_and="bitwise_and", bitwise_or="bitwise_or", bitwise_xor="bitwise_xor")


@_reg(aten.bitwise_not.default)
def _bitwise_not(env: Env, b: dict) -> Lowered:
    """~x: a bool mask is x == 0; an int is -x - 1 (two's complement, exact with wrapping)."""
    x = b["self"]
    t = env.tensor(x)
    if not _is_operand(env, x):
        raise Unsupported(f"bitwise_not of {_describe(env, x)}")
    L = Lowered()
    if t[1] == torch.bool:
        L.add("eq", [x], scalar=0)
    elif t[1] in _INTS:
        L.add("sub", [L.add("neg", [x])], scalar=1)
    else:
        raise Unsupported(f"bitwise_not of a {t[1]} tensor (integer or bool only)")
    return L


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


@_reg(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(env: Env, b: dict) -> Lowered:
    """x.masked_fill(mask, v) is where(mask, v, x): v a number or a 0-d tensor (eager
    ``masked_fill_`` through this functional form)."""
    return _where(env, {"condition": b["mask"], "self": b["value"], "other": b["self"]})




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
    elif not math.isfinite(e):
        raise Unsupported(f"pow with exponent {e}")
    elif e == 0:  # 1 everywhere (NaN and inf included), as torch
        cond = L.add("lt", [x], scalar=0)
        L.dtypes[cond.index] = torch.bool
        L.add("where", [cond], a=1, b=1)
    elif e == int(e):
        # |x|^e = exp(e * log|x|); an odd e gives x's sign back: where(x < 0, -r, r)
        r = L.add("exp", [L.add("mul", [L.add("log", [L.add("abs", [x])])], scalar=e)])
        if int(e) % 2:
            neg = L.add("lt", [x], scalar=0)
            L.dtypes[neg.index] = torch.bool
            L.add("where", [neg, L.add("neg", [r]), r])
    else:
        # exp(e * log(x)): NaN for x < 0 as torch (log of a negative), 0 / inf at x = 0
        L.add("exp", [L.add("mul", [L.add("log", [x])], scalar=e)])
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
    """A reduction; ``dtype=`` (sum, mean) casts x first, as torch (an int mean as
    ``mean(x, dtype=torch.float32)``), and a bool sum counts in int64 as torch."""
    x = b["self"]
    t = env.tensor(x)
    dtype = b.get("dtype")
    if dtype is None and op == "sum" and t is not None and t[1] == torch.bool:
        dtype = torch.int64
    dims = _dims(env, x, b.get(dim_key) if dim_key else None)
    keepdim = bool(b.get("keepdim", False)) if dim_key else False
    if dtype is None or t is None or _same_on_card(dtype, t[1]):
        return _unary(env, op, x, dims=dims, keepdim=int(keepdim))
    if not _is_operand(env, x):
        raise Unsupported(f"{op} of {_describe(env, x)}")
    if dtype not in _CARD_DTYPES or dtype == torch.bool:
        raise Unsupported(f"{op} with dtype={dtype} of a {t[1]} tensor")
    L = Lowered()
    L.add(op, [L.cast(x, dtype)], dims=dims, keepdim=int(keepdim))
    return L


_reg(aten.sum.dim_IntList)(lambda env, b: _reduction(env, "sum", b, "dim"))
_reg(aten.sum.default)(lambda env, b: _reduction(env, "sum", b, None))
_reg(aten.mean.dim)(lambda env, b: _reduction(env, "mean", b, "dim"))
_reg(aten.mean.default)(lambda env, b: _reduction(env, "mean", b, None))
_reg(aten.amax.default)(lambda env, b: _reduction(env, "amax", b, "dim"))
_reg(aten.amin.default)(lambda env, b: _reduction(env, "amin", b, "dim"))
# x.max() / x.min() without a dim: the extreme of every element (generate()'s unfinished.max() == 0)
_reg(aten.max.default)(lambda env, b: _reduction(env, "amax", b, None))
_reg(aten.min.default)(lambda env, b: _reduction(env, "amin", b, None))


@_reg(aten.cumsum.default)
def _cumsum(env: Env, b: dict) -> Lowered:
    """Inclusive prefix sums along one dim (int32/int64 in, int64 out as torch: both int32 on
    the card; an explicit dtype must keep the device format)."""
    x = b["self"]
    t = env.tensor(x)
    if t is None or not _is_operand(env, x):
        raise Unsupported(f"cumsum of {_describe(env, x)}")
    dtype = b.get("dtype")
    ints = (torch.int32, torch.int64)
    if dtype is not None and dtype != t[1] and not (dtype in ints and t[1] in ints):
        raise Unsupported(f"cumsum with dtype={dtype} of a {t[1]} tensor")
    rank = max(len(t[0]), 1)
    d = int(b["dim"])
    if not -rank <= d < rank:
        raise Unsupported(f"cumsum dim {d} of a rank-{len(t[0])} tensor")
    return _unary(env, "cumsum", x, dim=d % rank)


@_reg(aten.mm.default, aten.bmm.default, aten.matmul.default)
def _matmul(env: Env, b: dict) -> Lowered:
    x, y = b["self"], b.get("mat2", b.get("other"))
    if not (_is_operand(env, x) and _is_operand(env, y)):
        raise Unsupported(f"matmul of {_describe(env, x)} and {_describe(env, y)}")
    L = Lowered()
    if env.tensor(x)[1] == torch.float32 and env.tensor(y)[1] == torch.float32 and \
            min(len(env.tensor(x)[0]), len(env.tensor(y)[0])) >= 2:
        # fp32 through the PT array's DL16 mode: operands rounded to DL16 (9 fraction bits, fp32's
        # exponent range up to 2^32), fp32 accumulation, the result rounded to DL16 and widened
        (*bx, m, _), (*by, n) = env.tensor(x)[0], env.tensor(y)[0]
        mm = L.add("matmul", [L.cast(x, torch.float16), L.cast(y, torch.float16)])
        L.shapes[mm.index] = (*torch.broadcast_shapes(tuple(bx), tuple(by[:-1])), m, n)
        L.cast(mm, torch.float32)
        return L
    L.add("matmul", [x, y])
    return L


def register_plain_unaries(names: list[str]) -> list[str]:
    """Gives every graph-IR op of ``names`` (ops.def: elementwise, one operand, no attributes)
    the ATen overload of the same name, unless a module registered a lowering of its own (clone,
    expand). Called once all lowering modules are imported; returns the names registered."""
    done = []
    for name in names:
        packet = getattr(aten, name, None)
        op = getattr(packet, "default", None)
        if op is None or op in _LOWERINGS:
            continue
        _reg(op)(lambda env, b, _n=name: _unary(env, _n, b["self"]))
        done.append(name)
    return done

