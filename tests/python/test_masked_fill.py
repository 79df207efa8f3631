"""masked_fill on the card: where(mask, value, x) (attention masks, generate()'s bookkeeping)."""

from __future__ import annotations

import pytest
import torch

from torch_spyre.testing import cached_randn


def _rounded(t: torch.Tensor) -> torch.Tensor:
    return t.to("spyre").cpu()


@pytest.mark.parametrize("value", [-1.5, float("-inf"), 0.0])
@pytest.mark.parametrize("mask_shape", [(2, 4, 16, 64), (1, 1, 16, 64), (16, 1)])
def test_masked_fill_is_bit_exact_in_strict_mode(value, mask_shape, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _rounded(cached_randn((2, 4, 16, 64), key="mf"))
    mask = cached_randn(mask_shape, dtype=torch.float32, key="mfm") > 0.3
    expected = x.masked_fill(mask, value)
    assert torch.equal(x.to("spyre").masked_fill(mask.to("spyre"), value).cpu(), expected)
    xs = x.to("spyre")
    xs.masked_fill_(mask.to("spyre"), value)
    assert torch.equal(xs.cpu(), expected)
    torch._dynamo.reset()
    f = torch.compile(lambda a, m: a.masked_fill(m, value) + 1, dynamic=False)
    torch.testing.assert_close(f(x.to("spyre"), mask.to("spyre")).cpu(), expected + 1, atol=0.1, rtol=0.1)


def test_masked_fill_with_a_0d_tensor_value(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _rounded(cached_randn((8, 64), key="mf0"))
    mask = cached_randn((8, 64), dtype=torch.float32, key="mf0m") < 0
    v = torch.tensor(2.5, dtype=torch.float16)
    assert torch.equal(x.to("spyre").masked_fill(mask.to("spyre"), v.to("spyre")).cpu(), x.masked_fill(mask, v))
