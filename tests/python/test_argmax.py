"""argmax / argmin along a dim on the card (strict mode): where(x == amax(x), arange(n), n)
reduced by amin, torch's first index on ties, a NaN counted as the extreme; exact against torch
on the device-rounded input, compiled and eager."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()


def _input(dtype):
    x = (torch.randn(8, 100) * 10).to(dtype)
    x[2, 5] = x[2, 9] = 1000  # a tie: the first index wins
    x[3, 7] = x[3, 8] = -1000
    return x


@pytest.mark.parametrize("fn", [torch.argmax, torch.argmin])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32, torch.int64])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_compiled_matches_torch(fn, dtype, dim, keepdim):
    x = _input(dtype)
    got = torch.compile(lambda t: fn(t, dim, keepdim))(x.to("spyre")).cpu()
    ref = fn(x.to("spyre").cpu(), dim, keepdim)
    assert got.dtype == torch.int64 and torch.equal(got, ref)


@pytest.mark.parametrize("fn", [torch.argmax, torch.argmin])
def test_eager_matches_torch(fn):
    x = _input(torch.float16)
    assert torch.equal(fn(x.to("spyre"), -1).cpu(), fn(x.to("spyre").cpu(), -1))


@pytest.mark.parametrize("fn", [torch.argmax, torch.argmin])
def test_nan_counts_as_the_extreme_in_fp32(fn):
    x = torch.randn(4, 64)
    x[1, 10] = x[1, 20] = float("nan")
    got = torch.compile(lambda t: fn(t, -1))(x.to("spyre")).cpu()
    assert torch.equal(got, fn(x, -1))


@pytest.mark.parametrize("fn", [torch.max, torch.min])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32])
def test_max_min_with_a_dim_give_values_and_indices(fn, dtype):
    x = _input(dtype)
    got = torch.compile(lambda t: fn(t, 1))(x.to("spyre"))
    ref = fn(x.to("spyre").cpu(), 1)
    assert torch.equal(got.values.cpu(), ref.values) and torch.equal(got.indices.cpu(), ref.indices)
