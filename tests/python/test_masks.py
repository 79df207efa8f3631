"""Masks and generation bookkeeping on the card (SPYRE_STRICT=1: nothing on the CPU), eager and
compiled: bitwise and / or / xor / not on bool and int32 / int64, logical ops, isin, all / any
with their out= forms, mixed-dtype promotion as torch does (bool x int, int x float, f16 x f32),
int32 cat at offsets inside a stick. Integer and bool results are exact."""

from __future__ import annotations

import zlib

import pytest
import torch

from torch_spyre._errors import Unsupported


def _gen(key) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def _ints(shape, dtype, key, lo=-1000, hi=1000) -> torch.Tensor:
    return torch.randint(lo, hi, shape, generator=_gen((shape, dtype, key)), dtype=dtype)


def _bools(shape, key) -> torch.Tensor:
    return torch.randint(0, 2, shape, generator=_gen((shape, key))).bool()


def _compiled(fn, *args):
    torch._dynamo.reset()
    out = torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args])
    return out.cpu() if isinstance(out, torch.Tensor) else tuple(o.cpu() for o in out)


def _eager(fn, *args):
    out = fn(*[a.to("spyre") for a in args])
    return out.cpu() if isinstance(out, torch.Tensor) else tuple(o.cpu() for o in out)


RUNNERS = {"eager": _eager, "compiled": _compiled}


def _exact(got: torch.Tensor, expected: torch.Tensor) -> None:
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert torch.equal(got, expected)


INT_BITWISE = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "not": lambda a, b: ~a + b,
    "scalar": lambda a, b: (a & 0x0F0F) | (b ^ -3),
}


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("name", list(INT_BITWISE))
def test_int_bitwise_is_exact(name, dtype, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    shape = (3, 70)
    a, b = _ints(shape, dtype, "a", -(1 << 20), 1 << 20), _ints(shape, dtype, "b", -(1 << 20), 1 << 20)
    a[0, :3] = torch.tensor([0, -1, 2**31 - 1 if dtype == torch.int32 else 12345])
    _exact(RUNNERS[mode](INT_BITWISE[name], a, b), INT_BITWISE[name](a, b))


BOOL_FNS = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "not": lambda a, b: ~a,
    "logical_not": lambda a, b: torch.logical_not(a),
    "logical_and": lambda a, b: torch.logical_and(a, b),
    "logical_or": lambda a, b: torch.logical_or(a, b),
    "logical_xor": lambda a, b: torch.logical_xor(a, b),
    "and_not": lambda a, b: a & ~b,
}


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("name", list(BOOL_FNS))
def test_bool_masks_are_exact(name, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a, b = _bools((4, 100), "a"), _bools((4, 100), "b")
    _exact(RUNNERS[mode](BOOL_FNS[name], a, b), BOOL_FNS[name](a, b))


@pytest.mark.parametrize("mode", list(RUNNERS))
def test_logical_ops_of_numbers_are_masks(mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a = _ints((2, 50), torch.int32, "a", -2, 3)
    b = (torch.randn(2, 50, generator=_gen("b")) * 2).round().half()
    fn = lambda x, y: (torch.logical_and(x, y), torch.logical_or(x, y), torch.logical_xor(x, y))  # noqa: E731
    for got, expected in zip(RUNNERS[mode](fn, a, b), fn(a, b)):
        _exact(got, expected)


PROMOTIONS = {
    # generate(): next_tokens * unfinished + pad * (1 - unfinished), unfinished & ~is_done
    "bool_x_int": (lambda a, m: a * m, torch.int64),
    "int_and_bool": (lambda a, m: a & ~m, torch.int64),
    "int_plus_bool": (lambda a, m: a + m, torch.int32),
    "int_x_float": (lambda a, m: a * m.half(), torch.int32),
    "int_cmp_float": (lambda a, m: a.float() * 0.5 > a, torch.int32),
    "int_div": (lambda a, m: a / (m.int() + 1), torch.int32),
}


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("name", list(PROMOTIONS))
def test_mixed_dtypes_promote_as_torch(name, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    fn, dtype = PROMOTIONS[name]
    a, m = _ints((3, 40), dtype, "a", -200, 200), _bools((3, 40), "m")
    got, expected = RUNNERS[mode](fn, a, m), fn(a, m)
    assert got.dtype == expected.dtype
    if expected.is_floating_point():
        torch.testing.assert_close(got, expected, atol=0.1, rtol=0.1 if expected.dtype == torch.float16 else 1e-6)
    else:
        _exact(got, expected)


def test_zero_dim_operand_does_not_widen(monkeypatch):
    # torch.result_type: a 0-d f32 tensor does not widen an f16 tensor
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x, s = torch.randn(4, 64).half(), torch.tensor(1.5)
    got = _compiled(lambda a, b: a * b, x, s)
    assert got.dtype == torch.float16
    torch.testing.assert_close(got, x * s, atol=0.1, rtol=0.1)


ISIN = {
    "tensor": lambda x, t: torch.isin(x, t),
    "invert": lambda x, t: torch.isin(x, t, invert=True),
    "scalar": lambda x, t: torch.isin(x, 7),
}


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float16], ids=["i64", "i32", "f16"])
@pytest.mark.parametrize("name", list(ISIN))
def test_isin_is_exact(name, dtype, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _ints((3, 20), torch.int32, "x", 0, 12).to(dtype)
    t = torch.tensor([2, 7, 11, 5]).to(dtype)
    _exact(RUNNERS[mode](ISIN[name], x, t), ISIN[name](x, t))


REDUCTIONS = {
    "all": lambda x: torch.all(x),
    "any": lambda x: torch.any(x),
    "all_dim": lambda x: torch.all(x, dim=-1),
    "any_dim_keep": lambda x: torch.any(x, dim=0, keepdim=True),
    "all_dims": lambda x: x.all(dim=(0, 1)),
}


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.float16], ids=["bool", "i64", "f16"])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_all_any_are_exact(name, dtype, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _ints((2, 3, 40), torch.int32, "x", 0, 8).to(dtype)  # about one zero in eight
    ones = torch.ones(2, 3, 40, dtype=dtype)
    ones[1, 2, 5] = 0
    for v in (x, ones, torch.ones_like(ones)):
        _exact(RUNNERS[mode](REDUCTIONS[name], v), REDUCTIONS[name](v))


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_out_variants_run_on_the_card(op, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _bools((5, 9), "x")
    out = torch.empty((), dtype=torch.bool, device="spyre")
    getattr(torch, op)(x.to("spyre"), out=out)
    _exact(out.cpu(), getattr(torch, op)(x))
    out_dim = torch.empty((5,), dtype=torch.bool, device="spyre")
    getattr(torch, op)(x.to("spyre"), 1, out=out_dim)
    _exact(out_dim.cpu(), getattr(torch, op)(x, 1))


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=["i64", "i32"])
def test_int_cat_inside_a_stick(dtype, mode, monkeypatch):
    # generate() appends each new token: cat([ids [1, 16], next [1, 1]], -1), an offset inside
    # an int32 stick (a lane-moving copy)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    ids, nxt = _ints((2, 16), dtype, "ids"), _ints((2, 1), dtype, "next")
    fn = lambda a, b: torch.cat([a, b, a], dim=-1)  # noqa: E731
    _exact(RUNNERS[mode](fn, ids, nxt), fn(ids, nxt))


def test_bitwise_of_floats_is_unsupported(monkeypatch):
    from torch_spyre import _C

    # The graph IR op checks its dtype: int32 / int64 only (torch itself has no float bitwise ops)
    text = ("graph(%a: f16[4, 64], %b: f16[4, 64]) {\n  %o = bitwise_and(%a, %b) : f16[4, 64]\n"
            "  return (%o)\n}\n")
    reason = _C.check_graph(text)
    assert "bitwise_and of f16" in reason and "int32 / int64 only" in reason
    monkeypatch.setenv("SPYRE_STRICT", "1")
    with pytest.raises(Unsupported, match="isin"):
        torch.isin(torch.zeros(4, 4, dtype=torch.int8, device="spyre"), torch.zeros(2, dtype=torch.int8,
                                                                                     device="spyre"))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float16],
                         ids=["i64", "i32", "f32", "f16"])
def test_eager_arange_runs_on_the_card(dtype, monkeypatch):
    # generate()'s position bookkeeping: torch.arange(n, device=...) outside the compiled forward
    monkeypatch.setenv("SPYRE_STRICT", "1")
    for args in [(7,), (3, 40), (2, 50, 3), (5, -9, -2), (0,)]:
        _exact(torch.arange(*args, dtype=dtype, device="spyre").cpu(), torch.arange(*args, dtype=dtype))
    if dtype.is_floating_point:  # the IR's arange takes integer start / step
        with pytest.raises(Unsupported, match="step=0.25: expected an integer"):
            torch.arange(0, 4, 0.25, dtype=dtype, device="spyre")


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float16], ids=["i64", "i32", "f16"])
def test_max_min_of_every_element(dtype, mode, monkeypatch):
    # generate()'s stop check: unfinished_sequences.max() == 0
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _ints((3, 40), torch.int32, "x", -50, 50).to(dtype)
    fn = lambda t: (t.max(), t.min(), t.max() == 0)  # noqa: E731
    for got, expected in zip(RUNNERS[mode](fn, x), fn(x)):
        _exact(got, expected)
