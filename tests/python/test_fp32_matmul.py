"""fp32 mm / bmm / matmul on the card (SPYRE_STRICT=1), eager and compiled: the PT array's DL16
mode (operands and result rounded to DL16, fp32 accumulation), so the result is fp32 within
DL16's precision of the CPU's fp32 product: max error < 1 % of the result's max magnitude."""

from __future__ import annotations

import pytest
import torch

CASES = {
    "mm": (lambda a, b: a @ b, (67, 256), (256, 96)),
    "bmm": (torch.bmm, (3, 40, 64), (3, 64, 72)),
    "linear_3d": (lambda a, b: torch.matmul(a, b), (2, 33, 128), (128, 64)),
    "large_values": (lambda a, b: (a * 1e5) @ b, (16, 64), (64, 32)),  # beyond fp16's range
}


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("name", list(CASES))
def test_fp32_matmul_is_fp32_within_dl16_precision(name, mode, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    fn, sa, sb = CASES[name]
    g = torch.Generator().manual_seed(len(name))
    a, b = torch.randn(sa, generator=g), torch.randn(sb, generator=g)
    ref = fn(a, b)
    if mode == "compiled":
        torch._dynamo.reset()
        fn = torch.compile(fn, dynamic=False)
    got = fn(a.to("spyre"), b.to("spyre")).cpu()
    assert got.dtype == torch.float32 and got.shape == ref.shape
    assert ((got - ref).abs().max() / ref.abs().max()).item() < 0.01
