"""stack on the card: a cat of the tensors unsqueezed at dim (strict, compiled and eager)."""

from __future__ import annotations

import pytest
import torch

from torch_spyre.testing import cached_randn


@pytest.mark.parametrize("shape,dim", [((8, 64), 0), ((8, 64), 1), ((4, 8, 64), -1), ((2, 4, 64), 1)])
def test_stack(shape, dim, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    ts = [cached_randn(shape, key=f"stack{i}{shape}") for i in range(3)]
    fn = lambda a, b, c: torch.stack([a, b, c], dim)  # noqa: E731
    torch._dynamo.reset()
    got = torch.compile(fn, dynamic=False)(*[t.to("spyre") for t in ts]).cpu()
    assert torch.equal(got, fn(*[t.to("spyre").cpu() for t in ts]))  # a copy: exact on card values
    eager = torch.stack([t.to("spyre") for t in ts], dim).cpu()
    assert torch.equal(eager, got)
