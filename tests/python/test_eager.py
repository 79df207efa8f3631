"""Eager mode: ATen ops on spyre tensors outside torch.compile (single-op compiled graphs,
in-place / out= variants, views, the boxed CPU fallback, strict mode)."""

from __future__ import annotations

import warnings

import pytest
import torch

import torch_spyre
from torch_spyre import FallbackWarning, _fallback
from torch_spyre._eager import eager_stats
from torch_spyre._fallback import count_fallbacks


def _pair(shape=(67, 256)):
    a = torch.randn(shape, dtype=torch.float16)
    b = torch.randn(shape, dtype=torch.float16)
    return a, b, a.to("spyre"), b.to("spyre")


def test_binary_op_runs_on_the_card():
    a, b, sa, sb = _pair()
    calls = eager_stats.spyre_calls
    with count_fallbacks() as fb:
        out = sa + sb
    assert out.device.type == "spyre" and not fb
    assert eager_stats.spyre_calls == calls + 1
    torch.testing.assert_close(out.cpu(), a + b, atol=0.1, rtol=0.1)


def test_single_op_graphs_are_cached_per_signature():
    a, b, sa, sb = _pair((13, 70))
    torch.mul(sa, sb)
    compiled = eager_stats.compiled
    for _ in range(3):
        x = torch.randn(13, 70, dtype=torch.float16)
        torch.testing.assert_close(torch.mul(x.to("spyre"), sb).cpu(), x * b, atol=0.1, rtol=0.1)
    assert eager_stats.compiled == compiled  # new values, same shapes/dtypes: no compile
    torch.mul(sa[:5], sb[:5])
    assert eager_stats.compiled == compiled + 1  # new shape: one more


def test_scalar_operands_are_part_of_the_key():
    a, _, sa, _ = _pair((8, 64))
    torch.testing.assert_close((sa * 2).cpu(), a * 2, atol=0.1, rtol=0.1)
    torch.testing.assert_close((sa * -3.5).cpu(), a * -3.5, atol=0.1, rtol=0.1)
    torch.testing.assert_close((sa + torch.tensor(1.25)).cpu(), a + 1.25, atol=0.1, rtol=0.1)


def test_views_as_operands():
    a, b, sa, sb = _pair((64, 128))
    torch.testing.assert_close((sa.t() * sb.t()).cpu(), a.t() * b.t(), atol=0.1, rtol=0.1)
    torch.testing.assert_close((sa[1:5, 3:70] - sb[2:6, 0:67]).cpu(), a[1:5, 3:70] - b[2:6, 0:67], atol=0.1, rtol=0.1)


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "relu_", "neg_", "abs_", "exp_", "clamp_"])
def test_in_place(op):
    a, b, sa, sb = _pair((33, 130))
    args = {"add_": (b,), "sub_": (b,), "mul_": (b,), "div_": (b.abs() + 0.5,), "clamp_": (-0.5, 0.5)}.get(op, ())
    dev_args = tuple(x.to("spyre") if isinstance(x, torch.Tensor) else x for x in args)
    expected = getattr(a.clone(), op)(*args)
    ptr = sa.data_ptr()
    res = getattr(sa, op)(*dev_args)
    assert res is sa and sa.data_ptr() == ptr
    torch.testing.assert_close(sa.cpu(), expected, atol=0.1, rtol=0.1)


def test_in_place_on_a_view_writes_through():
    z = torch.zeros(4, 64, device="spyre")
    z[1:3].add_(torch.ones(2, 64, device="spyre"))
    z[:, 5].mul_(0)
    expected = torch.zeros(4, 64)
    expected[1:3] = 1
    expected[:, 5] = 0
    assert torch.equal(z.cpu(), expected)


def test_out_variants():
    a, b, sa, sb = _pair((16, 64))
    out = torch.empty(0, dtype=torch.float16, device="spyre")
    res = torch.add(sa, sb, out=out)
    assert res is out and out.shape == (16, 64)
    torch.testing.assert_close(out.cpu(), a + b, atol=0.1, rtol=0.1)
    out2 = torch.empty(16, dtype=torch.float16, device="spyre")
    torch.sum(sa, 1, out=out2)
    torch.testing.assert_close(out2.cpu(), a.sum(1), atol=0.1, rtol=0.1)
    out3 = torch.empty(16, 64, dtype=torch.float16, device="spyre")
    torch.sin(sa, out=out3)  # long tail: CPU fallback writes into the spyre out tensor
    torch.testing.assert_close(out3.cpu(), torch.sin(a), atol=0.1, rtol=0.1)


def test_mixed_precision_falls_back_and_matches():
    a = torch.randn(8, 64, dtype=torch.float16)
    b = torch.randn(8, 64, dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        out = a.to("spyre") + b.to("spyre")
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), a + b, atol=0.1, rtol=0.1)


def test_random_and_factory_ops_on_spyre():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (FallbackWarning, UserWarning))
        torch.manual_seed(3)
        r = torch.randn(5, 64, device="spyre")
        assert r.device.type == "spyre" and r.shape == (5, 64) and r.cpu().std() > 0.5
        ar = torch.arange(10, device="spyre", dtype=torch.float32)
        assert torch.equal(ar.cpu(), torch.arange(10, dtype=torch.float32))


def test_long_tail_warns_once_per_op(monkeypatch):
    monkeypatch.delenv("SPYRE_STRICT", raising=False)
    monkeypatch.setattr(_fallback, "_warned", set())
    x = torch.randn(8, 64, dtype=torch.float16)
    sx = x.to("spyre")
    with pytest.warns(FallbackWarning, match=r"aten\.atan\.out ran on the CPU"):
        torch.atan(sx)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        with count_fallbacks() as fb:
            out = torch.atan(sx)
    assert fb == {"aten.atan.out": 1}
    torch.testing.assert_close(out.cpu(), torch.atan(x), atol=0.1, rtol=0.1)


def test_strict_mode_raises_in_eager(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    sx = torch.randn(8, 64, dtype=torch.float16).to("spyre")
    with pytest.raises(NotImplementedError, match=r"Unsupported: aten\.atan\.out cannot run on spyre .*SPYRE_STRICT=1"):
        torch.atan(sx)
    assert isinstance(torch_spyre.Unsupported("x"), NotImplementedError)
    out = sx * sx  # supported ops still run
    assert out.device.type == "spyre"


def test_fallback_warning_is_a_user_warning():
    assert issubclass(FallbackWarning, UserWarning)


def test_decomposed_ops_cache_their_graph():
    from torch_spyre import _eager

    x = torch.randn(6, 70, dtype=torch.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        torch.softmax(x.to("spyre"), -1)
        n = len(_eager._decomp_cache)
        y = torch.randn(6, 70, dtype=torch.float16)
        out = torch.softmax(y.to("spyre"), -1)
    assert len(_eager._decomp_cache) == n
    torch.testing.assert_close(out.cpu(), torch.softmax(y, -1), atol=0.1, rtol=0.1)


def test_int_tensors_still_work():
    a = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        out = a.to("spyre") * 3 + a.to("spyre")
        c = a.to("spyre").clone()
    assert torch.equal(out.cpu(), a * 3 + a)
    assert torch.equal(c.cpu(), a)


def test_result_type_cache_keeps_scalar_types_and_shapes_apart():
    # The eager path caches each op's result type per argument signature (_argscan): 2, 2.0 and
    # True are equal as Python keys but promote an int tensor differently, and a broadcast
    # operand changes the result shape.
    x = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    s = x.to("spyre")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        for _ in range(2):  # the second round hits the cache
            for other in (2, 2.0, True):
                got = s * other
                want = x * other
                assert got.dtype == want.dtype, other
                torch.testing.assert_close(got.cpu(), want)
    a = torch.randn(4, 64, dtype=torch.float16)
    for b in (torch.randn(4, 64, dtype=torch.float16), torch.randn(1, 64, dtype=torch.float16),
              torch.randn(4, 1, dtype=torch.float16)):
        got = a.to("spyre") + b.to("spyre")
        assert got.shape == (a + b).shape
        torch.testing.assert_close(got.cpu(), a + b, atol=0.1, rtol=0.1)


def test_argscan_leaves_match_pytree():
    from torch.utils._pytree import tree_flatten

    from torch_spyre import _argscan

    t = torch.ones(2)
    args = (t, [t, 3, (4.0, None)], torch.Size([2, 3]), "s")
    kwargs = {"dim": 1, "out": t, "sizes": [1, 2]}
    got, want = _argscan.leaves(args, kwargs), tree_flatten((args, kwargs))[0]
    assert len(got) == len(want) and all(g is w or g == w for g, w in zip(got, want))
    assert _argscan.signature(args, kwargs) is not None
    assert _argscan.signature(([[1], {2}],), {}) is None  # an unhashable leaf: no cache key
