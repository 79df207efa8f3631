"""RoPE's rotate_half (cat(-x[..., h:], x[..., :h], dim=-1)) compiles to one `rotatehalf` kernel
(the rotate-half pass, SPYRE_FUSION): results match torch on the CPU and equal the unfused
compile (SPYRE_FUSION=0: slices, neg and the cat's copies) bit for bit."""

from __future__ import annotations

import pytest
import torch

import torch_spyre  # noqa: F401
from torch_spyre._compile import compile_stats


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _rope(q, cos, sin):
    return q * cos + _rotate_half(q) * sin


def _compiled(fn, args, monkeypatch, fusion: bool):
    monkeypatch.setenv("SPYRE_FUSION", "1" if fusion else "0")
    torch._dynamo.reset()
    out = torch.compile(fn, backend="spyre", dynamic=False)(*[a.to("spyre") for a in args])
    plan = compile_stats.last.plan()
    launches = [line for line in plan.splitlines() if line.startswith("launch")]
    return out.cpu(), launches


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16)


@pytest.mark.parametrize("shape", [(1, 4, 67, 64), (1, 2, 64, 128), (3, 5, 192)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rope_matches_cpu_and_unfused(shape, dtype, monkeypatch):
    torch.manual_seed(7)
    q = torch.randn(shape).to(dtype)
    cos, sin = torch.randn(shape[-2:]).to(dtype), torch.randn(shape[-2:]).to(dtype)
    got, on = _compiled(_rope, (q, cos, sin), monkeypatch, True)
    off, off_launches = _compiled(_rope, (q, cos, sin), monkeypatch, False)
    assert sum("rotatehalf" in line for line in on) == 1, on
    assert not any("rotatehalf" in line for line in off_launches)
    assert len(on) < len(off_launches), (on, off_launches)
    ref = _rope(q.float(), cos.float(), sin.float())
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)
    assert torch.equal(_bits(got), _bits(off))


@pytest.mark.parametrize("shape", [(1, 4, 67, 64), (2, 33, 128), (5, 3, 320)])
def test_rotate_half_alone_is_one_exact_kernel(shape, monkeypatch):
    # One launch; a pure lane move plus negation of the device's DL16 values: equal to the
    # unfused chain bit for bit (the host <-> DL16 conversions round, so torch CPU only closely).
    torch.manual_seed(3)
    x = torch.randn(shape).half()
    got, on = _compiled(_rotate_half, (x,), monkeypatch, True)
    off, off_launches = _compiled(_rotate_half, (x,), monkeypatch, False)
    assert len(on) == 1 and "rotatehalf" in on[0], on
    assert len(off_launches) > 1
    assert torch.equal(_bits(got), _bits(off))
    torch.testing.assert_close(got.float(), _rotate_half(x.float()), atol=0.1, rtol=0.1)


def test_partial_width_is_left_alone(monkeypatch):
    # A last dim that does not fill whole sticks (GPT-NeoX's partial rotary: 16) keeps the chain.
    torch.manual_seed(5)
    x = torch.randn(2, 8, 16).half()
    got, on = _compiled(_rotate_half, (x,), monkeypatch, True)
    assert not any("rotatehalf" in line for line in on)
    torch.testing.assert_close(got.float(), _rotate_half(x.float()), atol=0.1, rtol=0.1)
