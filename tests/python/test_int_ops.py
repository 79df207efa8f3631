"""Integer compute on the card (SPYRE_STRICT=1: nothing on the CPU): int32 / int64 elementwise
ops, comparisons of any dtype giving bool, where with a bool condition on 32-lane values, casts
between int, float and bool, and cumsum. int64 lives as int32 on the card (as torch-spyre stores
it); results come back in torch's dtype. Integer results are exact; fp16 within 0.1."""

from __future__ import annotations

import zlib

import pytest
import torch

SHAPES = [(7,), (3, 70), (2, 5, 33)]


def _gen(key) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def _ints(shape, dtype, key, lo=-1000, hi=1000) -> torch.Tensor:
    return torch.randint(lo, hi, shape, generator=_gen((shape, dtype, key)), dtype=dtype)


def _floats(shape, dtype, key) -> torch.Tensor:
    # fp16 values exact in DL16 (what the card holds), so comparisons agree with the CPU
    x = torch.randn(shape, generator=_gen((shape, dtype, key))) * 4
    return x.round() / 4 if dtype == torch.float16 else x.to(dtype)


def _on_card(fn, *args):
    torch._dynamo.reset()
    out = torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args])
    return out.cpu() if isinstance(out, torch.Tensor) else tuple(o.cpu() for o in out)


INT_FNS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "neg_abs": lambda a, b: (-a) + torch.abs(b),
    "minmax": lambda a, b: torch.maximum(a, b) - torch.minimum(a, 3 * b),
    "scalars": lambda a, b: (a + 7) * 2 - 5,
    "where": lambda a, b: torch.where(a > b, a, b - 1),
}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("name", list(INT_FNS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_int_elementwise_is_exact(name, dtype, shape, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a, b = _ints(shape, dtype, "a"), _ints(shape, dtype, "b")
    expected = INT_FNS[name](a, b)
    got = _on_card(INT_FNS[name], a, b)
    assert got.dtype == expected.dtype
    assert torch.equal(got, expected)


def test_int_mixed_widths_narrow_to_int32(monkeypatch):
    # int64 * int32 promotes to int64 in torch; both are int32 on the card
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a, b = _ints((4, 40), torch.int64, "a"), _ints((4, 40), torch.int32, "b")
    got = _on_card(lambda x, y: x * y + 1, a, b)
    assert got.dtype == torch.int64
    assert torch.equal(got, a * b + 1)


CMPS = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float16],
                         ids=["i32", "i64", "f32", "f16"])
@pytest.mark.parametrize("cmp", list(CMPS))
def test_comparisons_give_bool(cmp, dtype, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    shape = (3, 70)
    make = _ints if not dtype.is_floating_point else _floats
    a, b = make(shape, dtype, "a"), make(shape, dtype, "b")
    b[0] = a[0]  # equal elements too
    fn = CMPS[cmp]
    got_t, got_s = _on_card(lambda x, y: (fn(x, y), fn(x, 1)), a, b)
    assert got_t.dtype == torch.bool and got_s.dtype == torch.bool
    assert torch.equal(got_t, fn(a, b))
    assert torch.equal(got_s, fn(a, 1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.int64], ids=["f32", "i32", "i64"])
def test_where_with_a_bool_condition_on_32_lane_values(dtype, monkeypatch):
    # the condition comes from an fp16 compare (64-lane bool sticks), the values have 32 lanes
    monkeypatch.setenv("SPYRE_STRICT", "1")
    shape = (5, 33)
    c = _floats(shape, torch.float16, "c")
    make = _ints if not dtype.is_floating_point else _floats
    a, b = make(shape, dtype, "a"), make(shape, dtype, "b")
    fn = lambda c, a, b: (torch.where(c > 0, a, b), torch.where(c < 0.5, a, 0))  # noqa: E731
    got1, got2 = _on_card(fn, c, a, b)
    exp1, exp2 = fn(c, a, b)
    assert torch.equal(got1, exp1) and torch.equal(got2, exp2)


def _launches() -> list[str]:
    from torch_spyre._compile import compile_stats

    return [line for line in compile_stats.last.plan().splitlines() if line.startswith("launch")]


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32], ids=["i32", "f32"])
def test_a_32_lane_compare_feeds_where_without_a_bool_round_trip(dtype, monkeypatch):
    # MoE routing's pattern (topk's first index, histc, the grouped matmul's row groups): a
    # compare of 32-lane values read by a where on 32-lane values and by a cast to int32. The
    # where reads the compare's 0 / 1 (decompose), not its bool converted back from DL16, so
    # compare, where and the readers are one stick geometry and one fused kernel. Exact.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    shape = (6, 96)
    make = _ints if not dtype.is_floating_point else _floats
    a, b = make(shape, dtype, "a"), make((6, 1), dtype, "b")
    a[:, :3] = b  # equal elements too
    ar = torch.arange(96, dtype=torch.int32).view(1, 96).expand(6, 96).contiguous()

    def fn(a, b, ar):
        hit = a <= b
        return torch.where(hit, ar, 96), hit.to(torch.int32) * 3

    got = _on_card(fn, a, b, ar)
    expected = fn(a, b, ar)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and torch.equal(g, e)
    # one fused kernel: le, where, mul (int32: the to_dtype is le's own 0 / 1; fp32: one
    # conversion of it to int32 for both readers, in the walk); without the rule: le, its DL16
    # cast and a cast back per reader, 6 kernels
    assert len(_launches()) == 1, _launches()


CASTS = [
    (torch.int32, torch.float32), (torch.int64, torch.float32), (torch.int32, torch.float16),
    (torch.float32, torch.int32), (torch.float16, torch.int64), (torch.int64, torch.int32),
    (torch.bool, torch.int32), (torch.bool, torch.float32), (torch.bool, torch.float16),
    (torch.int32, torch.bool), (torch.float32, torch.bool), (torch.float16, torch.bool),
]


@pytest.mark.parametrize("src,dst", CASTS, ids=[f"{str(s)[6:]}-{str(d)[6:]}" for s, d in CASTS])
def test_casts(src, dst, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    shape = (3, 70)
    if src == torch.bool:
        x = _ints(shape, torch.int32, "x", 0, 2).bool()
    elif src.is_floating_point:
        x = _floats(shape, src, "x") * 10
        x[0, :5] = 0
    else:
        x = _ints(shape, src, "x", -300, 300)
        x[0, :5] = 0
    got = _on_card(lambda t: t.to(dst) + (0 if dst != torch.bool else False), x)
    expected = x.to(dst)
    assert got.dtype == dst
    if dst == torch.float16:
        torch.testing.assert_close(got, expected, atol=0.1, rtol=0.1)
    else:
        assert torch.equal(got, expected)


CUMSUMS = [((2, 64), 1), ((2, 64), 0), ((3, 70), 1), ((3, 70), -2), ((200,), 0), ((2, 5, 33), 1), ((2, 5, 33), 2),
           ((2, 3, 4, 90), 3)]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float16],
                         ids=["i32", "i64", "f32", "f16"])
@pytest.mark.parametrize("shape,dim", CUMSUMS, ids=[f"{'x'.join(map(str, s))}-d{d}" for s, d in CUMSUMS])
def test_cumsum(shape, dim, dtype, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    if dtype.is_floating_point:
        x = (_floats(shape, dtype, "x") / 8).to(dtype)
    else:
        x = _ints(shape, dtype, "x", -50, 50)
    got = _on_card(lambda t: torch.cumsum(t, dim), x)
    expected = torch.cumsum(x, dim)
    assert got.dtype == expected.dtype
    if dtype.is_floating_point:
        torch.testing.assert_close(got.float(), expected.float(), atol=0.1, rtol=0.1)
    else:
        assert torch.equal(got, expected)


def test_roberta_position_ids(monkeypatch):
    # transformers' create_position_ids_from_input_ids: pad positions keep padding_idx
    monkeypatch.setenv("SPYRE_STRICT", "1")
    pad = 1
    ids = _ints((2, 64), torch.int64, "ids", 0, 50)
    ids[:, 50:] = pad

    def position_ids(input_ids):
        mask = input_ids.ne(pad).int()
        incremental = (torch.cumsum(mask, dim=1).type_as(mask) + 0) * mask
        return incremental.long() + pad

    got = _on_card(position_ids, ids)
    assert got.dtype == torch.int64
    assert torch.equal(got, position_ids(ids))


def test_cpu_fallback_runs_int_histc(monkeypatch):
    # A MoE router calls histc on int32 for a non-CPU device; the CPU has no int histc kernel,
    # so the fallback runs it in float64 (exact here) and returns the int32 counts on the card.
    # (Up to 256 bins histc runs on the card, test_routing_ops.py; 300 bins fall back.)
    from torch_spyre._fallback import count_fallbacks

    monkeypatch.delenv("SPYRE_STRICT", raising=False)
    x = _ints((40,), torch.int32, "experts", 0, 300)
    with count_fallbacks() as fb:
        got = torch.histc(x.to("spyre"), bins=300, min=0, max=300)
    assert got.device.type == "spyre" and got.dtype == torch.int32
    assert torch.equal(got.cpu(), torch.histc(x.double(), bins=300, min=0, max=300).to(torch.int32))
    assert sum(fb.values()) == 1


ARANGES = [((64,), {}), ((5, 200, 3), {}), ((-7, 90, 2), {"dtype": torch.int32}), ((0, 40), {"dtype": torch.float32}),
           ((1, 4, 0.25), {"dtype": torch.float32}), ((0, 100), {"dtype": torch.float16})]


@pytest.mark.parametrize("args,kw", ARANGES, ids=[f"{a}-{str(k.get('dtype', 'i64'))[6:]}" for a, k in ARANGES])
def test_arange_on_the_card(args, kw, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = torch.ones(torch.arange(*args, **kw).numel(), dtype=torch.arange(*args, **kw).dtype)
    fn = lambda t: torch.arange(*args, **kw, device=t.device) * t  # noqa: E731  (input-dependent: not folded)
    got = _on_card(fn, x)
    expected = fn(x)
    assert got.dtype == expected.dtype
    if expected.is_floating_point():
        torch.testing.assert_close(got, expected, atol=0.1 if expected.dtype == torch.float16 else 1e-5, rtol=1e-3)
    else:
        assert torch.equal(got, expected)


SUMS = [((3, 70), [1], False), ((3, 70), [0], True), ((2, 5, 33), [2], False), ((2, 5, 33), [0, 2], False),
        ((200,), [0], False), ((4, 64), [1], True)]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
@pytest.mark.parametrize("shape,dims,keep", SUMS, ids=[f"{'x'.join(map(str, s))}-{d}-{k}" for s, d, k in SUMS])
def test_int_reductions_are_exact(shape, dims, keep, op, dtype, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _ints(shape, dtype, "r", -10**6, 10**6)
    fn = lambda t: getattr(torch, op)(t, dims, keepdim=keep)  # noqa: E731
    got = _on_card(fn, x)
    expected = fn(x)
    assert got.dtype == expected.dtype
    assert torch.equal(got, expected)
