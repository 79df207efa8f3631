"""max_pool2d on the card (_decompositions_conv.py: a running maximum over strided tap windows),
strict, compiled and eager: values and indices bit for bit against the CPU on inputs the card
represents exactly (a fp16 tensor after a round trip through the card's DL16)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def _card_exact(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).half().to("spyre").cpu()


@pytest.mark.parametrize("shape,k,s,p,d,ceil", [
    ((1, 8, 16, 16), 3, 2, 1, 1, False),  # ResNet's stem pool
    ((2, 4, 15, 15), 3, 2, 1, 1, True),  # ceil_mode, odd size
    ((1, 8, 9, 9), 2, 2, 0, 1, False),
    ((1, 4, 12, 12), 3, 1, 1, 2, False),  # dilation
    ((4, 10, 10), 3, 3, 0, 1, True),  # unbatched
])
def test_max_pool2d_values_and_indices(shape, k, s, p, d, ceil, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _card_exact(*shape, seed=sum(shape) + k)
    x.view(-1)[5] = x.view(-1)[6]  # a tie: the first maximum's index wins
    fn = lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)  # noqa: E731
    torch._dynamo.reset()
    values, indices = torch.compile(fn, dynamic=False)(x.to("spyre"))
    ref_values, ref_indices = fn(x)
    assert torch.equal(values.cpu(), ref_values)
    assert torch.equal(indices.cpu(), ref_indices)


def test_max_pool2d_eager_fp32_nan(monkeypatch):
    # fp32 keeps NaN on the card (DL16, fp16's card format, has none: user-guide), and a NaN
    # propagates through the window as torch's CPU kernel does.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = torch.randn(1, 2, 6, 6, generator=torch.Generator().manual_seed(7))
    x[0, 0, 1, 1] = float("nan")
    got, idx = F.max_pool2d(x.to("spyre"), 2, return_indices=True)
    ref, ref_idx = F.max_pool2d(x, 2, return_indices=True)
    torch.testing.assert_close(got.cpu(), ref, equal_nan=True, atol=0, rtol=0)
    assert torch.equal(idx.cpu(), ref_idx)
