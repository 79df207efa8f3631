"""Uneven work division (docs/superdsc.md §2): a dim whose extent no core count divides is split
in slices of ceil(n / splits) with a shorter last one, one program per run of equal slices; for
matmuls, M when its largest divisor up to 32 is small. Results against torch CPU, and bit for bit
between the JIT and the reference interpreter."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from torch_spyre._build import compile_stats
from torch_spyre.testing import cached_randn, compare_with_cpu


def _splits(op: str) -> list[dict[str, int]]:
    """numWkSlicesPerDim_ of every kernel of the last compiled graph whose SuperDSC runs `op`."""
    out = []
    for text in compile_stats.last.superdscs():
        (name, body), = json.loads(text).items()
        if next(iter(body["dscs_"][0])) == op:
            out.append(body["numWkSlicesPerDim_"])
    return out


def _run(fn, *args, engine: str, monkeypatch) -> torch.Tensor:
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args]).cpu()


def _jit_equals_interpreter(fn, *args, monkeypatch) -> torch.Tensor:
    jit = _run(fn, *args, engine="jit", monkeypatch=monkeypatch)
    interp = _run(fn, *args, engine="interp", monkeypatch=monkeypatch)
    assert torch.equal(jit.view(torch.int16) if jit.dtype == torch.float16 else jit,
                       interp.view(torch.int16) if interp.dtype == torch.float16 else interp)
    return jit


def test_layer_norm_over_prime_rows_uses_every_core(monkeypatch):
    # 1151 rows (a prime): the row-fused layer norm in 31 slices of 36 rows and one of 35;
    # unfused (SPYRE_FUSION=0), exx2 and layernormscale the same, with the same bits.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    n = 8192
    x = cached_randn((1151, n), key="uneven-ln", scale=2.0) + 4
    w, b = cached_randn((n,), key="uneven-w"), cached_randn((n,), key="uneven-b")
    fn = lambda t, w_, b_: F.layer_norm(t, (n,), w_, b_)  # noqa: E731
    got = _jit_equals_interpreter(fn, x, w, b, monkeypatch=monkeypatch)
    assert _splits("fused") == [{"mb": 32, "out": 1}]
    monkeypatch.setenv("SPYRE_FUSION", "0")
    unfused = _run(fn, x, w, b, engine="jit", monkeypatch=monkeypatch)
    assert _splits("exx2") == [{"mb": 32, "out": 1}]
    assert _splits("layernormscale") == [{"mb": 32, "out": 1}]
    assert torch.equal(got.view(torch.int16), unfused.view(torch.int16))
    expected = fn(x.float(), w.float(), b.float())
    torch.testing.assert_close(got.float(), expected, atol=0.1, rtol=0.1)


def test_softmax_over_seven_rows(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = cached_randn((7, 1000), key="uneven-sm", scale=2.0)
    fn = lambda t: torch.softmax(t, -1)  # noqa: E731
    got = _jit_equals_interpreter(fn, x, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), fn(x.float()), atol=0.1, rtol=0.1)
    compare_with_cpu(fn, x, on_spyre=True)


def test_add_over_33_rows_splits_17_ways(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a, b = cached_randn((33, 64), key="uneven-a"), cached_randn((33, 64), key="uneven-b")
    got = _jit_equals_interpreter(torch.add, a, b, monkeypatch=monkeypatch)
    assert _splits("add") == [{"mb": 17, "out": 1}]  # 16 cores of 2 rows, one of 1
    torch.testing.assert_close(got, (a.float() + b.float()).half(), atol=0.1, rtol=0.1)


@pytest.mark.parametrize("rows", list(range(1, 41)))
def test_rows_sweep_against_cpu(rows, monkeypatch):
    # Every row count 1..40 on 32 cores: layer norm, a row sum and a broadcast multiply, whose
    # kernels split the rows evenly where a divisor serves and unevenly elsewhere.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = cached_randn((rows, 192), key=f"sweep-{rows}", scale=2.0) + 1
    w = cached_randn((192,), key="sweep-w")

    def fn(t, w_):
        return F.layer_norm(t, (192,)) * w_ + t.sum(-1, keepdim=True)

    compare_with_cpu(fn, x, w, on_spyre=True, run_eager=False)


def test_sum_over_a_row_dim_with_uneven_outer_rows(monkeypatch):
    # A nonstick reduction (dim 1 of [33, 5, 320]): the kept 33 rows split 17 ways (16 x 2 + 1).
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = cached_randn((33, 5, 320), key="uneven-nonstick")
    fn = lambda t: t.sum(1)  # noqa: E731
    got = _jit_equals_interpreter(fn, x, monkeypatch=monkeypatch)
    assert _splits("sumnonstick")[0]["mb"] == 17
    torch.testing.assert_close(got.float(), fn(x.float()), atol=0.1, rtol=0.1)


# Matmuls whose rows no core count divides well split M unevenly (no K split then).
@pytest.mark.parametrize("shape_a,shape_b,uneven", [
    ((127, 512), (512, 256), True),  # prime rows: no even row split
    ((1151, 128), (128, 64), True),
    ((2, 127, 512), (2, 512, 256), True),  # batched, prime rows per batch
    ((3, 67, 128), (3, 128, 64), False),  # the batch and N splits cost less here
])
def test_matmul_prime_rows_split_unevenly(shape_a, shape_b, uneven, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a = cached_randn(shape_a, key=f"um-a{shape_a}")
    b = cached_randn(shape_b, key=f"um-b{shape_b}", scale=0.1)
    got = _jit_equals_interpreter(torch.matmul, a, b, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), a.float() @ b.float(), atol=0.1, rtol=0.1)
    (split,) = _splits("batchmatmul")
    assert (shape_a[-2] % split["mb"] != 0) == uneven
    if uneven:
        assert split["in"] == 1


def test_matmul_rows_with_a_good_divisor_keep_the_even_split(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    a, b = cached_randn((4096, 64), key="um-even-a"), cached_randn((64, 64), key="um-even-b", scale=0.1)
    got = _run(torch.matmul, a, b, engine="jit", monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), a.float() @ b.float(), atol=0.1, rtol=0.1)
    assert all(4096 % s["mb"] == 0 for s in _splits("batchmatmul"))
