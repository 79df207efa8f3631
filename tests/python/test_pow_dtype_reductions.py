"""pow with any exponent (a number, a tensor, a number base with a tensor exponent) and
reductions with ``dtype=`` (an int mean, a bool count) on the card (SPYRE_STRICT=1), eager and
compiled, against torch CPU: fp16 within atol = rtol = 0.1, fp32 within 1e-3 relative (exp / log
in fp32), integers exact."""

from __future__ import annotations

import zlib

import pytest
import torch


def _gen(key) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def _compiled(fn, *args):
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args]).cpu()


def _eager(fn, *args):
    return fn(*[a.to("spyre") for a in args]).cpu()


RUNNERS = {"eager": _eager, "compiled": _compiled}


def _close(got: torch.Tensor, expected: torch.Tensor) -> None:
    assert got.dtype == expected.dtype
    tol = 0.1 if expected.dtype == torch.float16 else 1e-3
    torch.testing.assert_close(got, expected, atol=tol, rtol=tol, equal_nan=True)


POW_SCALAR = {
    "2.5_of_abs": lambda x: torch.pow(x.abs(), 2.5),
    "int_4": lambda x: x ** 4,
    "odd_5": lambda x: x ** 5,
    "neg_int_-2": lambda x: x ** -2,
    "fraction_of_negatives": lambda x: x ** 0.3,  # NaN where x < 0 (fp32; DL16 has no NaN)
    "zero": lambda x: torch.pow(x, 0.0),
}


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("name", list(POW_SCALAR))
def test_pow_with_a_number_exponent(name, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = torch.randn(3, 50, generator=_gen(name)) * 1.5
    x[0, 0] = 0
    if name == "neg_int_-2":
        x = x.sign() * (x.abs() + 0.25)  # no 1 / 0
    _close(RUNNERS[mode](POW_SCALAR[name], x), POW_SCALAR[name](x))
    if name != "fraction_of_negatives":
        h = x.half()
        _close(RUNNERS[mode](POW_SCALAR[name], h), POW_SCALAR[name](h))


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
def test_pow_with_a_tensor_exponent(dtype, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = (torch.randn(4, 40, generator=_gen("x")) * 2).to(dtype)
    y = (torch.randint(-3, 4, (4, 40), generator=_gen("y")).float() / torch.tensor([1.0, 2.0, 1.0, 4.0])[:, None])
    y = y.to(dtype)
    x[0, :4] = torch.tensor([0.0, -2.0, -2.0, 3.0], dtype=dtype)
    y[0, :4] = torch.tensor([0.0, 3.0, 2.0, -1.0], dtype=dtype)  # 0^0, (-2)^3, (-2)^2, 3^-1
    if dtype == torch.float16:
        x = x.abs() + 0.5  # no NaN (DL16 has none) and no 1 / 0
    _close(RUNNERS[mode](torch.pow, x, y), torch.pow(x, y))


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
def test_pow_with_a_number_base(dtype, mode, monkeypatch):
    # RoPE's inverse frequencies: base ** (arange(0, d, 2) / d)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    y = (torch.arange(0, 64, 2, dtype=torch.float32) / -64).to(dtype)
    fn = lambda e: 10000.0 ** e  # noqa: E731
    _close(RUNNERS[mode](fn, y), fn(y))


@pytest.mark.parametrize("mode", list(RUNNERS))
def test_integer_pow_is_left_to_the_cpu_and_strict_says_so(mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = torch.randint(0, 5, (3, 8), dtype=torch.int32)
    with pytest.raises(Exception, match="pow"):
        RUNNERS[mode](torch.pow, x, x)


DTYPE_REDUCTIONS = {
    "int_mean_f32": (lambda x: x.mean(dtype=torch.float32), torch.int32),
    "int_mean_dim_f16": (lambda x: torch.mean(x, 1, dtype=torch.float16), torch.int64),
    "int_sum_f32": (lambda x: x.sum(-1, dtype=torch.float32), torch.int32),
    "f16_sum_f32": (lambda x: x.sum(0, dtype=torch.float32), torch.float16),
    "bool_count": (lambda x: (x > 2).sum(-1), torch.int32),
    "bool_count_all": (lambda x: (x > 2).sum(), torch.int64),
}


@pytest.mark.parametrize("mode", list(RUNNERS))
@pytest.mark.parametrize("name", list(DTYPE_REDUCTIONS))
def test_reductions_with_a_dtype(name, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    fn, dtype = DTYPE_REDUCTIONS[name]
    x = torch.randint(-8, 9, (3, 70), generator=_gen(name)).to(dtype)
    got, expected = RUNNERS[mode](fn, x), fn(x)
    if expected.is_floating_point():
        _close(got, expected)
    else:
        assert got.dtype == expected.dtype and torch.equal(got, expected)
