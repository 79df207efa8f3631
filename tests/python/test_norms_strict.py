"""fp16 norms as torch 2.13 runs them stay on the card (issue 17): nn.RMSNorm (its composite
upcasts to fp32 first), the HF Llama RMSNorm written with `.to(float32)` and back, and
nn.LayerNorm, eager and compiled, under SPYRE_STRICT=1 (any CPU node raises), against CPU."""

from __future__ import annotations

import pytest
import torch

import torch_spyre  # noqa: F401


class LlamaRMSNorm(torch.nn.Module):
    def __init__(self, n: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(n, dtype=torch.float16) + 0.5)
        self.eps = eps

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        dt = h.dtype
        h = h.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        return self.weight * (h * torch.rsqrt(var + self.eps)).to(dt)


def _affine(m: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():
        if getattr(m, "weight", None) is not None:
            m.weight.uniform_(0.5, 1.5)
        if getattr(m, "bias", None) is not None:
            m.bias.uniform_(-0.5, 0.5)
    return m


CASES = {
    "rmsnorm": (lambda: torch.nn.RMSNorm(512, dtype=torch.float16), (2, 7, 512)),
    "rmsnorm_default_eps": (lambda: torch.nn.RMSNorm(256, dtype=torch.float16), (5, 256)),
    "rmsnorm_no_affine": (lambda: torch.nn.RMSNorm(512, eps=1e-5, elementwise_affine=False,
                                                   dtype=torch.float16), (3, 512)),
    "llama_rmsnorm": (lambda: LlamaRMSNorm(512), (2, 5, 512)),
    "layernorm": (lambda: torch.nn.LayerNorm(512, dtype=torch.float16), (2, 7, 512)),
}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fp16_norm_runs_on_the_card_in_strict_mode(name, compiled, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    make, shape = CASES[name]
    m = _affine(make())
    x = torch.randn(shape, dtype=torch.float16) * 2 + 0.5
    with torch.no_grad():
        want = m(x)
        torch._dynamo.reset()
        ms = m.to("spyre")
        f = torch.compile(ms, backend="spyre") if compiled else ms
        got = f(x.to("spyre")).cpu()
    assert got.dtype == torch.float16
    torch.testing.assert_close(got, want, atol=0.1, rtol=0.1)
