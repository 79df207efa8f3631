"""Group norm and linalg.vector_norm on the card (_decompositions_norms.py), strict, compiled and
eager, against fp32 CPU (atol = rtol = 0.1, as torch-spyre compares fp16)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from torch_spyre.testing import cached_randn


def _strict_compiled(fn, *args, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args]).cpu()


@pytest.mark.parametrize("shape,groups,affine", [
    ((2, 8, 16), 4, True),  # wav2vec2-style [N, C, T]
    ((2, 8, 4, 4), 2, False),  # image [N, C, H, W]
    ((1, 6, 10), 6, True),  # one channel per group (instance norm)
    ((3, 4, 5), 1, True),  # one group (layer norm over C and T)
])
def test_group_norm(shape, groups, affine, monkeypatch):
    x = cached_randn(shape, key=f"gn{shape}", scale=2.0) + 1
    c = shape[1]
    w = cached_randn((c,), key=f"gnw{c}") if affine else None
    b = cached_randn((c,), key=f"gnb{c}") if affine else None
    args = [x] + ([w, b] if affine else [])
    fn = (lambda t, w_, b_: F.group_norm(t, groups, w_, b_, 1e-5)) if affine else (lambda t: F.group_norm(t, groups))
    got = _strict_compiled(fn, *args, monkeypatch=monkeypatch)
    ref = fn(*[a.float() for a in args])
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)


def test_group_norm_module_eager(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch.manual_seed(0)
    gn = torch.nn.GroupNorm(2, 8).eval()
    x = cached_randn((2, 8, 12), key="gn-eager")
    with torch.no_grad():
        ref = gn(x.float())
        got = gn.half().to("spyre")(x.to("spyre")).cpu()
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, 0.5])
@pytest.mark.parametrize("dim,keepdim", [(-1, False), ((0, 2), True), (None, False)])
def test_vector_norm(ord, dim, keepdim, monkeypatch):
    x = cached_randn((4, 6, 64), key="vn", scale=3.0)
    x[0, 0, :7] = 0  # zeros count for ord 0
    fn = lambda t: torch.linalg.vector_norm(t, ord, dim, keepdim)  # noqa: E731
    got = _strict_compiled(fn, x, monkeypatch=monkeypatch)
    ref = fn(x.float())
    # Where the norm itself exceeds fp16 (ord 0.5 over hundreds of elements: ~1e5), torch's fp16
    # result is inf as well.
    ref = torch.where(ref > torch.finfo(torch.float16).max, torch.inf, ref)
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)


def test_vector_norm_does_not_overflow_where_the_norm_fits(monkeypatch):
    # 300^2 overflows fp16 (65504); the scaled form keeps |x| / max <= 1.
    x = torch.full((2, 64), 300.0, dtype=torch.float16)
    got = _strict_compiled(lambda t: torch.linalg.vector_norm(t, dim=-1), x, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), torch.full((2,), 2400.0), atol=0.1, rtol=0.01)
    zeros = _strict_compiled(lambda t: torch.linalg.vector_norm(t, dim=-1), torch.zeros(2, 64, dtype=torch.float16),
                             monkeypatch=monkeypatch)
    assert torch.equal(zeros, torch.zeros(2, dtype=torch.float16))  # 0, not NaN (0 / 0)


def test_normalize_as_clip_does(monkeypatch):
    x = cached_randn((8, 128), key="clip-normalize")
    fn = lambda t: t / t.norm(dim=-1, keepdim=True)  # noqa: E731
    got = _strict_compiled(fn, x, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), fn(x.float()), atol=0.1, rtol=0.1)


def test_batch_norm_in_eval_mode(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(8).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    x = cached_randn((2, 8, 6, 6), key="bn")
    with torch.no_grad():
        ref = bn(x.float())
        m = bn.half().to("spyre")
        torch._dynamo.reset()
        got = torch.compile(m, dynamic=False)(x.to("spyre")).cpu()
        eager = m(x.to("spyre")).cpu()
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)
    torch.testing.assert_close(eager.float(), ref, atol=0.1, rtol=0.1)


def test_weight_norm_over_a_large_conv_weight(monkeypatch):
    # wav2vec2's positional conv: weight_norm(dim=2) of a [256, 64, 16] weight; its norm reduces
    # [256, 64] per tap, one dim at a time (one reduction's rows would not fit LX).
    monkeypatch.setenv("SPYRE_STRICT", "1")
    v = cached_randn((256, 64, 16), key="wn-v")
    g = cached_randn((1, 1, 16), key="wn-g")
    fn = lambda v_, g_: torch._weight_norm(v_, g_, 2)  # noqa: E731
    got = _strict_compiled(fn, v, g, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), fn(v.float(), g.float()), atol=0.1, rtol=0.1)
