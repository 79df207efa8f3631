"""Real sizes: operands far larger than one core's LX. A K-split matmul whose per-core K slice
does not fit in LX goes through it in chunks of K tiles (pt.mm accumulating); the capacity
check counts tensors, not the iteration space (M*K*N)."""

from __future__ import annotations

import torch

from torch_spyre import _C
from torch_spyre.testing import cached_randn


def _dl16(x: torch.Tensor) -> torch.Tensor:
    return x.to("spyre").cpu()


def test_k_split_matmul_with_k_chunks_in_lx(monkeypatch):
    # 32 x 16384 @ 16384 x 2048: 8 N blocks x 4 K slices; each core's 4096-deep K slice of a
    # 512-column block is 4 MiB of B: two chunks through LX.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _dl16(cached_randn((32, 16384), key="kchunk-x", scale=0.1))
    w = _dl16(cached_randn((16384, 2048), key="kchunk-w", scale=0.1))
    expected = (x.float() @ w.float())
    torch._dynamo.reset()
    got = torch.compile(lambda a, b: a @ b, dynamic=False)(x.to("spyre"), w.to("spyre")).cpu()
    torch.testing.assert_close(got.float(), expected, atol=0.1, rtol=0.05)


def test_a_llama_7b_mlp_at_prefill_compiles():
    # 2048 x 4096 @ 4096 x 11008 (M*K*N*4 bytes is 369 TB; the tensors are 122 MiB).
    text = ("graph(%a: f16[2048, 4096], %b: f16[4096, 11008]) {\n"
            "  %o = matmul(%a, %b) : f16[2048, 11008]\n  return (%o)\n}\n")
    assert _C.check_graph(text) == ""  # compiles through frontend, backend and verifier


def test_mixed_float_operands_promote_on_the_card(monkeypatch):
    # T5's norm multiplies an fp16 tensor by an fp32 statistic: torch promotes to fp32.
    from torch_spyre.testing import compare_with_cpu

    monkeypatch.setenv("SPYRE_STRICT", "1")
    a = _dl16(cached_randn((67, 256), key="mixed-a"))
    b = cached_randn((67, 1), dtype=torch.float32, key="mixed-b")
    compare_with_cpu(lambda a, b: a * torch.rsqrt(b.abs() + 1), a, b, on_spyre=True)
    compare_with_cpu(lambda a, b: b.abs() - a, a, b, on_spyre=True)
