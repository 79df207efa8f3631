"""Indirect access on the card: embedding, index_select and x[idx] (the ISA's dma.gather).

A gather copies the table's device bytes, so the result is bit-exact against the CPU op on the
DL16-rounded table (what the card holds); an index outside the table is a device error, never
a host read outside it, in both engines.
"""

from __future__ import annotations

import zlib

import pytest
import torch
import torch.nn.functional as F

import torch_spyre
from torch_spyre import _C
from torch_spyre.testing import cached_randn, compare_with_cpu


def _rounded(t: torch.Tensor) -> torch.Tensor:
    return t.to("spyre").cpu()


def _indices(shape, rows, dtype=torch.int64, key="idx"):
    g = torch.Generator().manual_seed(zlib.crc32(repr((shape, rows, key)).encode()))
    return torch.randint(0, rows, shape, generator=g, dtype=dtype)


CASES = [
    # (table shape, index shape, table dtype, index dtype)
    ((50, 64), (7,), torch.float16, torch.int64),
    ((1000, 256), (2, 64), torch.float16, torch.int64),
    ((97, 130), (3, 70), torch.float16, torch.int32),   # partial sticks on both sides, 3 index sticks
    ((33, 96), (1, 5), torch.bfloat16, torch.int64),
    ((40, 40), (65,), torch.float32, torch.int64),
    ((300, 768), (4, 100), torch.float16, torch.int64),
]


@pytest.mark.parametrize("table_shape,index_shape,dtype,itype", CASES,
                         ids=[f"{t[0]}x{t[1]}-{'x'.join(map(str, i))}-{str(d)[6:]}-{str(it)[6:]}"
                              for t, i, d, it in CASES])
def test_embedding_is_the_rows_of_the_table(table_shape, index_shape, dtype, itype, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    w = _rounded(cached_randn(table_shape, dtype=dtype, key="emb"))
    idx = _indices(index_shape, table_shape[0], itype)
    expected = F.embedding(idx, w)
    got_eager = F.embedding(idx.to("spyre"), w.to("spyre")).cpu()
    assert torch.equal(got_eager, expected)
    torch._dynamo.reset()
    got = torch.compile(lambda i, t: F.embedding(i, t) * 2, dynamic=False)(idx.to("spyre"), w.to("spyre")).cpu()
    torch.testing.assert_close(got, expected * 2, atol=0.1, rtol=0.1)


@pytest.mark.parametrize("cores", ["1", "3", "32"])
def test_embedding_core_counts(cores, monkeypatch):
    monkeypatch.setenv("SENCORES", cores)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    w = _rounded(cached_randn((500, 192), key="cores"))
    idx = _indices((6, 96), 500)
    assert torch.equal(F.embedding(idx.to("spyre"), w.to("spyre")).cpu(), F.embedding(idx, w))


def test_nn_embedding_module_compiles_into_one_graph_on_the_card(monkeypatch):
    emb = torch.nn.Embedding(1000, 128, dtype=torch.float16)
    with torch.no_grad():
        emb.weight.copy_(_rounded(emb.weight.detach()))
    idx = _indices((2, 40), 1000)
    with torch.no_grad():
        expected = torch.relu(emb(idx))
    emb_s = emb.to("spyre")
    monkeypatch.setenv("SPYRE_STRICT", "1")  # nothing below may run on the CPU
    torch._dynamo.reset()
    graphs = []

    def count(gm, example_inputs):
        graphs.append(gm)
        return torch_spyre._compile.spyre_backend(gm, example_inputs)

    f = torch.compile(lambda i: torch.relu(emb_s(i)), backend=count, dynamic=False)
    with torch.no_grad():
        got = f(idx.to("spyre")).cpu()
    assert torch.equal(got, expected)
    assert len(graphs) == 1


def test_index_select_and_advanced_indexing_by_one_tensor():
    w = _rounded(cached_randn((77, 200), key="isel"))
    idx = _indices((33,), 77)
    compare_with_cpu(lambda t, i: torch.index_select(t, 0, i) + 1, w, idx, on_spyre=True)
    compare_with_cpu(lambda t, i: t[i] * 3, w, idx, on_spyre=True)
    compare_with_cpu(lambda t, i: t[i], w, _indices((2, 9), 77), on_spyre=True)


@pytest.mark.parametrize("bad", [77, -1, 1 << 30])
@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_an_index_outside_the_table_is_a_device_error(bad, engine, monkeypatch):
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    w = cached_randn((77, 64), key="oob").to("spyre")
    idx = torch.zeros(40, dtype=torch.int64)
    idx[35] = bad
    with pytest.raises(RuntimeError, match=r"dma.gather on core \d+: index " + str(bad) +
                       r" \(entry \d+ of the index list\) is outside the table's rows \[0, 77\)"):
        F.embedding(idx.to("spyre"), w).cpu()


def test_unsupported_forms_say_what():
    text = ("graph(%w: f16[4, 8, 64], %i: i64[3]) {\n  %o = embedding(%w, %i) : f16[3, 8, 64]\n"
            "  return (%o)\n}\n")
    assert "Unsupported: embedding with a rank-3 table" in _C.check_graph(text)
    text = ("graph(%w: f16[4, 64], %i: f16[3]) {\n  %o = embedding(%w, %i) : f16[3, 64]\n"
            "  return (%o)\n}\n")
    assert "Unsupported: f16 embedding indices" in _C.check_graph(text)
