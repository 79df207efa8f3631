"""int32 / int64 transposes and stick-moving permutes on the card, bit for bit (issue 18): the PE
array moves 16-bit words, so the frontend moves a 32-bit value as its four byte fields in fp16
(each exact in DL16) and adds them back (frontend/lib/int_transpose.cpp). The values here are
computed on the card first, so the transpose is a kernel, not a host-side view of an input."""

from __future__ import annotations

import pytest
import torch

CASES = [
    ((70, 70), lambda x: (x * 3).t() + x * 3),
    ((3, 40, 40), lambda x: (x + 1).transpose(1, 2) * (x + 1)),
    ((2, 5, 40, 5), lambda x: (x - 7).permute(0, 3, 2, 1) - (x - 7)),
]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_int_transpose_is_bit_exact(case, dtype, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    shape, f = CASES[case]
    g = torch.Generator().manual_seed(case)
    x = torch.randint(-2**31, 2**31 - 1, shape, dtype=torch.int32, generator=g)
    x[(0,) * len(shape)] = -2**31  # the sign field alone
    torch._dynamo.reset()
    got = torch.compile(f, dynamic=False)(x.to(dtype).to("spyre")).cpu()
    assert torch.equal(got.to(torch.int32), f(x))  # int32 wrap-around, as the card's int32 compute
