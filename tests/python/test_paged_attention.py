"""Paged attention's block-table reads on the card (SPYRE_STRICT=1): a KV cache in blocks
[num_blocks, block_size, kv_heads, head_dim] read through an int32 block table [batch,
max_blocks] (vLLM's layout, torch-spyre's paged attention, ktir-cpu's kernel): ``cache[table]``
is a dma.gather of whole blocks, then GQA decode attention masked by each sequence's context
length, in one compiled graph, against the same computation in fp32 on the CPU. A block
number outside the cache is a device fault."""

from __future__ import annotations

import math

import pytest
import torch

from torch_spyre.testing import cached_randn

NB, BS, KVH, D, B, MB, H = 16, 16, 2, 64, 3, 4, 4


def _paged_decode(q, kc, vc, table, ctx):
    b, mb = table.shape
    k = kc[table].reshape(b, mb * BS, KVH, D).transpose(1, 2)  # [B, KVH, S, D]
    v = vc[table].reshape(b, mb * BS, KVH, D).transpose(1, 2)
    k = k.repeat_interleave(H // KVH, dim=1)
    v = v.repeat_interleave(H // KVH, dim=1)
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
    pos = torch.arange(mb * BS, device=q.device, dtype=torch.int32)
    live = pos[None, :] < ctx[:, None]  # [B, S]: the sequence's tokens
    s = s.masked_fill(~live[:, None, None, :], float("-inf"))
    return torch.softmax(s, -1) @ v


def _inputs():
    kc = cached_randn((NB, BS, KVH, D), key="paged-k").to("spyre").cpu()
    vc = cached_randn((NB, BS, KVH, D), key="paged-v").to("spyre").cpu()
    q = cached_randn((B, H, 1, D), key="paged-q").to("spyre").cpu()
    g = torch.Generator().manual_seed(4)
    table = torch.randperm(NB, generator=g)[:B * MB].reshape(B, MB).to(torch.int32)
    ctx = torch.tensor([50, 64, 7], dtype=torch.int32)
    return q, kc, vc, table, ctx


@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_paged_decode_attention_runs_on_the_card(engine, monkeypatch):
    from torch_spyre._compile import compile_stats

    monkeypatch.setenv("SPYRE_STRICT", "1")
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    q, kc, vc, table, ctx = _inputs()
    ref = _paged_decode(q.float(), kc.float(), vc.float(), table, ctx)
    torch._dynamo.reset()
    f = torch.compile(_paged_decode, dynamic=False)
    got = f(*[t.to("spyre") for t in (q, kc, vc, table, ctx)]).cpu()
    assert compile_stats.fallback_nodes == 0
    assert got.dtype == torch.float16
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)
    # another block table and context lengths: the same compiled graph, new data
    table2, ctx2 = table.flip(0), torch.tensor([1, 33, 64], dtype=torch.int32)
    got2 = f(*[t.to("spyre") for t in (q, kc, vc, table2, ctx2)]).cpu()
    torch.testing.assert_close(got2.float(), _paged_decode(q.float(), kc.float(), vc.float(), table2, ctx2),
                               atol=0.1, rtol=0.1)


def test_a_block_number_outside_the_cache_is_a_device_fault(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    q, kc, vc, table, ctx = _inputs()
    table[1, 2] = NB
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match=rf"dma\.gather on core \d+: index {NB} \(entry \d+ of the index "
                                           rf"list\) is outside the table's rows \[0, {NB}\)"):
        torch.compile(_paged_decode, dynamic=False)(*[t.to("spyre") for t in (q, kc, vc, table, ctx)]).cpu()
