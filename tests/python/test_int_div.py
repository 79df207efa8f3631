"""Integer floor division and remainder on the card (SPYRE_STRICT=1), bit-exact against torch on
the CPU over the whole int32 range: by tensors and by numbers, negative operands (floor
rounding, the divisor's sign for the remainder), INT_MIN // -1 wrapping, in eager kernels and
compiled graphs. A zero divisor raises as torch does (``ZeroDivisionError``): a Python 0 while
the graph is built, a zero element of a divisor tensor as a device fault on the card."""

from __future__ import annotations

import pytest
import torch

I32 = torch.iinfo(torch.int32)


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()


def _operands(dtype):
    g = torch.Generator().manual_seed(18)
    n = 3000
    a = torch.randint(I32.min, I32.max, (n,), generator=g, dtype=torch.int32)
    b = torch.randint(I32.min, I32.max, (n,), generator=g, dtype=torch.int32)
    b[:1000] = torch.randint(-50, 50, (1000,), generator=g, dtype=torch.int32)
    b[1000:2000] = torch.randint(-70000, 70000, (1000,), generator=g, dtype=torch.int32)
    b[b == 0] = 7
    edges = [(I32.min, -1), (I32.min, 1), (I32.max, -1), (I32.min, I32.max), (7, I32.min), (-7, I32.max),
             (0, -5), (I32.max, I32.max), (-6, 3), (6, -3), (-7, 2), (7, -2), (I32.min, I32.min)]
    a[:len(edges)] = torch.tensor([e[0] for e in edges], dtype=torch.int32)
    b[:len(edges)] = torch.tensor([e[1] for e in edges], dtype=torch.int32)
    return a.to(dtype).reshape(30, 100), b.to(dtype).reshape(30, 100)


def _run(f, mode, *args):
    g = f if mode == "eager" else torch.compile(f, dynamic=False)
    return g(*[a.to("spyre") for a in args]).cpu()


OPS = {"floor_divide": lambda a, b: a // b, "remainder": lambda a, b: a % b,
       "both": lambda a, b: torch.floor_divide(a, b) * 3 + torch.remainder(a, b)}


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("op", list(OPS))
def test_by_a_tensor_is_exact(op, dtype, mode):
    a, b = _operands(dtype)
    if dtype == torch.int64:  # int64 is int32 on the card: int32 values, wrapping as int32
        a, b = a // 2, b // 2
        b[b == 0] = 3
    got = _run(OPS[op], mode, a, b)
    ref = OPS[op](a.to(torch.int32), b.to(torch.int32)).to(dtype)
    assert got.dtype == dtype
    assert torch.equal(got, ref)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("c", [3, -7, 65537, -(1 << 20) - 3, I32.min, I32.max, 1, -1])
def test_by_a_number_is_exact(c, mode):
    a, _ = _operands(torch.int32)
    assert torch.equal(_run(lambda x: x // c, mode, a), a // c)
    assert torch.equal(_run(lambda x: x % c, mode, a), a % c)


@pytest.mark.parametrize("engine", ["jit", "interp"])
@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_a_zero_divisor_raises(op, mode, engine, monkeypatch):
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    a = torch.tensor([5, -6, 7, 8], dtype=torch.int32)
    b = torch.tensor([1, 2, 0, 3], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        OPS[op](a, b)  # torch's CPU kernel
    with pytest.raises(RuntimeError, match=r"dma\.gather on core \d+: index 1 \(entry 2 of the index list\) is "
                                           r"outside the table's rows \[0, 1\)"):
        _run(OPS[op], mode, a, b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        _run(lambda x: OPS[op](x, 0), mode, a)


def test_float_operands_are_left_to_other_kernels(monkeypatch):
    monkeypatch.delenv("SPYRE_STRICT")
    a = torch.tensor([5.5, -6.0], dtype=torch.float32)
    with pytest.warns(Warning):
        got = (a.to("spyre") // 2).cpu()
    assert torch.equal(got, a // 2)
