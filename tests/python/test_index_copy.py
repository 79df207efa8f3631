"""Writes at indices on the card: index_copy / index_copy_ / index_put along the second-to-last
dim (the ISA's dma.scatter), the update of transformers' static KV cache.

A scatter copies device bytes, so the result is bit-exact against the CPU op on DL16-rounded
inputs (what the card holds); an index outside the rows is a device error, never a host write
outside the tensor, in both engines.
"""

from __future__ import annotations

import zlib

import pytest
import torch

import torch_spyre
from torch_spyre import _C
from torch_spyre.testing import cached_randn


def _rounded(t: torch.Tensor) -> torch.Tensor:
    return t.to("spyre").cpu()


def _positions(k: int, rows: int, dtype=torch.int64, key="pos") -> torch.Tensor:
    """k distinct rows (a repeated index has no defined winner in torch)."""
    g = torch.Generator().manual_seed(zlib.crc32(repr((k, rows, key)).encode()))
    return torch.randperm(rows, generator=g)[:k].to(dtype)


CASES = [
    # (self shape, rows written, dtype, index dtype)
    ((64, 128), 5, torch.float16, torch.int64),
    ((1, 4, 128, 64), 1, torch.float16, torch.int64),     # a KV cache's decode step
    ((1, 4, 128, 64), 64, torch.float16, torch.int64),    # its prefill
    ((2, 3, 40, 130), 7, torch.float32, torch.int64),     # partial sticks, 6 slabs
    ((3, 70, 96), 33, torch.bfloat16, torch.int64),       # two index sticks (torch wants int64 indices)
]
IDS = [f"{'x'.join(map(str, s))}-k{k}-{str(d)[6:]}-{str(i)[6:]}" for s, k, d, i in CASES]


def _inputs(shape, k, dtype, itype):
    x = _rounded(cached_randn(shape, dtype=dtype, key="icx"))
    src_shape = shape[:-2] + (k,) + shape[-1:]
    src = _rounded(cached_randn(src_shape, dtype=dtype, key="ics"))
    return x, _positions(k, shape[-2], itype), src


@pytest.mark.parametrize("shape,k,dtype,itype", CASES, ids=IDS)
def test_index_copy_writes_the_rows_bit_exact(shape, k, dtype, itype, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x, pos, src = _inputs(shape, k, dtype, itype)
    dim = len(shape) - 2
    expected = x.index_copy(dim, pos, src)
    assert not torch.equal(expected, x)
    got = x.to("spyre").index_copy(dim, pos.to("spyre"), src.to("spyre")).cpu()
    assert torch.equal(got, expected)
    # In-place on a spyre tensor (eager).
    xs = x.to("spyre")
    xs.index_copy_(-2, pos.to("spyre"), src.to("spyre"))
    assert torch.equal(xs.cpu(), expected)
    # Compiled, with a consumer on the card.
    torch._dynamo.reset()
    f = torch.compile(lambda a, i, s: a.index_copy(dim, i, s) * 2, dynamic=False)
    got = f(x.to("spyre"), pos.to("spyre"), src.to("spyre")).cpu()
    torch.testing.assert_close(got, expected * 2, atol=0.1, rtol=0.1)


def test_static_cache_update_in_one_graph_mutates_the_cache(monkeypatch):
    """StaticCache.update: cache.index_copy_(2, pos, k) on a graph input, then attention reads
    the cache; the compiled graph writes the cache on the card and the caller sees it."""
    cache0, pos, k = _inputs((1, 4, 32, 64), 3, torch.float16, torch.int64)
    q = _rounded(cached_randn((1, 4, 3, 64), key="q"))

    def step(cache, p, kk, qq):
        cache.index_copy_(2, p, kk)
        return qq @ cache.transpose(-1, -2)

    ref_cache = cache0.clone()
    expected = step(ref_cache, pos, k, q.float().half())
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()
    graphs = []

    def count(gm, example_inputs):
        graphs.append(gm)
        return torch_spyre._compile.spyre_backend(gm, example_inputs)

    cache = cache0.to("spyre")
    got = torch.compile(step, backend=count, dynamic=False)(cache, pos.to("spyre"), k.to("spyre"), q.to("spyre"))
    assert torch.equal(cache.cpu(), ref_cache)
    torch.testing.assert_close(got.cpu(), expected, atol=0.1, rtol=0.1)
    assert len(graphs) == 1


def test_index_put_with_full_slices_before_the_index(monkeypatch):
    """cache[:, :, pos] = k (StaticCache's fallback when index_copy_ is missing) and x[idx] = v."""
    monkeypatch.setenv("SPYRE_STRICT", "1")
    cache, pos, k = _inputs((2, 4, 24, 64), 5, torch.float16, torch.int64)
    expected = cache.clone()
    expected[:, :, pos] = k
    got = cache.to("spyre")
    got[:, :, pos.to("spyre")] = k.to("spyre")
    assert torch.equal(got.cpu(), expected)

    def f(c, p, kk):
        c = c.clone()
        c[:, :, p] = kk
        return c + 1

    torch._dynamo.reset()
    out = torch.compile(f, dynamic=False)(cache.to("spyre"), pos.to("spyre"), k.to("spyre")).cpu()
    torch.testing.assert_close(out, expected + 1, atol=0.1, rtol=0.1)
    x, idx, v = _inputs((50, 64), 9, torch.float16, torch.int64)
    expected = x.clone()
    expected[idx] = v
    xs = x.to("spyre")
    xs[idx.to("spyre")] = v.to("spyre")
    assert torch.equal(xs.cpu(), expected)


@pytest.mark.parametrize("cores", ["1", "3", "32"])
def test_index_copy_core_counts(cores, monkeypatch):
    monkeypatch.setenv("SENCORES", cores)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x, pos, src = _inputs((2, 3, 50, 192), 11, torch.float16, torch.int64)
    got = x.to("spyre").index_copy(2, pos.to("spyre"), src.to("spyre")).cpu()
    assert torch.equal(got, x.index_copy(2, pos, src))


@pytest.mark.parametrize("bad", [40, -1, 1 << 30])
@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_an_index_outside_the_rows_is_a_device_error(bad, engine, monkeypatch):
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = cached_randn((2, 40, 64), key="oobx").to("spyre")
    src = cached_randn((2, 4, 64), key="oobs").to("spyre")
    pos = torch.tensor([3, 7, bad, 9])
    with pytest.raises(RuntimeError, match=r"dma.scatter on core \d+: index " + str(bad) +
                       r" \(entry 2 of the index list\) is outside the table's rows \[0, 40\)"):
        x.index_copy(1, pos.to("spyre"), src).cpu()


def test_unsupported_forms_say_what():
    text = ("graph(%x: f16[2, 2, 2, 4, 64], %i: i64[3], %s: f16[2, 2, 2, 3, 64]) {\n"
            "  %o = index_copy(%x, %i, %s) : f16[2, 2, 2, 4, 64]\n  return (%o)\n}\n")
    assert "Unsupported: index_copy into a rank-5 tensor" in _C.check_graph(text)
    text = ("graph(%x: f16[4, 64], %i: f16[3], %s: f16[3, 64]) {\n  %o = index_copy(%x, %i, %s) : f16[4, 64]\n"
            "  return (%o)\n}\n")
    assert "Unsupported: f16 index_copy indices" in _C.check_graph(text)
    # Along the last dim (element writes) stays on the CPU outside strict mode, correct there.
    x, pos = torch.zeros(4, 64, dtype=torch.float16), torch.tensor([1, 5])
    src = torch.ones(4, 2, dtype=torch.float16)
    with pytest.warns(Warning):
        got = x.to("spyre").index_copy(1, pos.to("spyre"), src.to("spyre")).cpu()
    assert torch.equal(got, x.index_copy(1, pos, src))
