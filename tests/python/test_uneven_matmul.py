"""Matmuls whose rows no core count divides well split them unevenly (docs/superdsc.md §2): M in
slices of ceil(M / m) with a shorter last one, one program per run of equal slices. Results
against torch CPU, bit for bit between the JIT and the reference interpreter, and the split
the work division chose."""

from __future__ import annotations

import json

import pytest
import torch

from torch_spyre._build import compile_stats
from torch_spyre.testing import cached_randn


def _matmul_splits() -> list[dict[str, int]]:
    out = []
    for text in compile_stats.last.superdscs():
        (_, body), = json.loads(text).items()
        if next(iter(body["dscs_"][0])) == "batchmatmul":
            out.append(body["numWkSlicesPerDim_"])
    return out


def _run(fn, *args, engine: str, monkeypatch) -> torch.Tensor:
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args]).cpu()


@pytest.mark.parametrize("shape_a,shape_b,uneven", [
    ((127, 512), (512, 256), True),  # prime rows: no even row split
    ((1151, 128), (128, 64), True),
    ((2, 127, 512), (2, 512, 256), True),  # batched, prime rows per batch
    ((3, 67, 128), (3, 128, 64), False),  # the batch and N splits cost less here
])
def test_prime_rows_split_unevenly(shape_a, shape_b, uneven, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a = cached_randn(shape_a, key=f"um-a{shape_a}")
    b = cached_randn(shape_b, key=f"um-b{shape_b}", scale=0.1)
    fn = torch.matmul
    jit = _run(fn, a, b, engine="jit", monkeypatch=monkeypatch)
    splits = _matmul_splits()
    interp = _run(fn, a, b, engine="interp", monkeypatch=monkeypatch)
    assert torch.equal(jit.view(torch.int16), interp.view(torch.int16))
    torch.testing.assert_close(jit.float(), fn(a.float(), b.float()), atol=0.1, rtol=0.1)
    (split,) = splits
    m, rows = split["mb"], shape_a[-2]
    assert (rows % m != 0) == uneven
    if uneven:
        assert split["in"] == 1  # never with a K split


def test_rows_with_a_good_divisor_keep_the_even_split(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a, b = cached_randn((4096, 64), key="um-even-a"), cached_randn((64, 64), key="um-even-b", scale=0.1)
    got = _run(torch.matmul, a, b, engine="jit", monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), a.float() @ b.float(), atol=0.1, rtol=0.1)
    assert all(4096 % s["mb"] == 0 for s in _matmul_splits())
