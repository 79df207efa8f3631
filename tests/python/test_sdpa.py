"""F.scaled_dot_product_attention compiles to the card (torch-spyre's math path in the input
dtype): plain, scaled, causal, with float and bool masks, and with grouped-query heads."""

import pytest
import torch
import torch.nn.functional as F

from torch_spyre._decompositions import sdpa_math, substitute_sdpa
from torch_spyre.testing import compare_with_cpu


def _qkv(b, hq, hkv, L, S, E, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, hq, L, E, generator=g, dtype=torch.float32).half()
    k = torch.randn(b, hkv, S, E, generator=g, dtype=torch.float32).half()
    v = torch.randn(b, hkv, S, E, generator=g, dtype=torch.float32).half()
    return q, k, v


@pytest.mark.parametrize("shape", [(1, 4, 64, 64, 64), (2, 2, 67, 129, 64), (1, 8, 128, 128, 128)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sdpa_runs_on_the_card(shape):
    b, h, L, S, E = shape
    q, k, v = _qkv(b, h, h, L, S, E)
    fb = compare_with_cpu(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v, run_eager=False)
    assert not fb["compile"], fb


def test_sdpa_scale_and_float_mask():
    q, k, v = _qkv(1, 2, 2, 64, 64, 64, seed=1)
    mask = (torch.randn(64, 64) * 2).half()
    fb = compare_with_cpu(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
                          q, k, v, mask, run_eager=False)
    assert not fb["compile"], fb


def test_sdpa_bool_mask_matches_cpu():
    q, k, v = _qkv(1, 2, 2, 64, 64, 64, seed=2)
    mask = torch.rand(64, 64) > 0.3
    mask[:, 0] = True  # no row is masked entirely
    compare_with_cpu(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, mask,
                     run_eager=False)


def test_sdpa_causal_matches_cpu():
    from torch_spyre._compile import compile_stats

    q, k, v = _qkv(1, 2, 2, 64, 64, 64, seed=3)
    fb = compare_with_cpu(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v,
                          run_eager=False)
    # The causal mask full(-inf).triu(1) depends on no input: computed once at compile time and
    # uploaded, so the whole attention is one partition with no CPU node.
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1 and compile_stats.fallback_nodes == 0


def test_sdpa_grouped_query_heads():
    q, k, v = _qkv(1, 4, 2, 64, 64, 64, seed=4)
    compare_with_cpu(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v,
                     run_eager=False)


def test_sdpa_math_matches_torch_on_cpu():
    q, k, v = _qkv(2, 4, 2, 33, 47, 64, seed=5)
    q, k, v = q.float(), k.float(), v.float()
    mask = torch.randn(33, 47)
    for kw in [{}, {"is_causal": True}, {"attn_mask": mask, "scale": 0.2}, {"enable_gqa": True}]:
        kk, vv = (k, v) if kw.get("enable_gqa") else (k.repeat_interleave(2, 1), v.repeat_interleave(2, 1))
        got = sdpa_math(q, kk, vv, **kw)
        want = F.scaled_dot_product_attention(q, kk, vv, **kw)
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_dropout_keeps_torch_sdpa():
    gm = torch.fx.symbolic_trace(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1))
    substitute_sdpa(gm)
    assert any(n.target is F.scaled_dot_product_attention for n in gm.graph.nodes)
    gm = torch.fx.symbolic_trace(lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
    substitute_sdpa(gm)
    assert any(n.target is sdpa_math for n in gm.graph.nodes)


def test_repeat_kv_of_grouped_query_attention_stays_on_the_card():
    # Hugging Face's repeat_kv: k[:, :, None].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d)
    # goes through rank-5 expand / clone nodes, which run on the card at rank 4.
    from torch_spyre._compile import compile_stats

    def attn(q, k, v):
        b, kv, s, d = k.shape
        rep = q.shape[1] // kv
        k = k[:, :, None].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d)
        v = v[:, :, None].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    q, k, v = _qkv(2, 4, 2, 64, 64, 64, seed=6)
    fb = compare_with_cpu(attn, q, k, v, run_eager=False)
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1 and compile_stats.fallback_nodes == 0


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")], ids=["post-relu", "pre-gelu"])
def test_transformer_encoder_layer_fast_path_runs_on_the_card(norm_first, activation):
    # In inference torch calls the fused aten._transformer_encoder_layer_fwd for PrivateUse1
    # devices too; the compiled path decomposes it into attention, feed-forward and norms.
    from torch_spyre._compile import compile_stats

    torch.manual_seed(7)
    layer = torch.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, activation=activation, batch_first=True,
                                             norm_first=norm_first).eval()
    x = torch.randn(2, 64, 128)
    with torch.no_grad():
        want = layer(x.half().float())
        layer = layer.half().to("spyre")
        torch._dynamo.reset()
        got = torch.compile(layer, backend="spyre", dynamic=False)(x.half().to("spyre")).cpu().float()
    assert compile_stats.partitions == 1 and compile_stats.fallback_nodes == 0
    torch.testing.assert_close(got, want, atol=0.1, rtol=0.1)


@pytest.mark.parametrize("need_weights", [False, True], ids=["no-weights", "weights"])
def test_multihead_attention_runs_on_the_card(need_weights):
    # nn.MultiheadAttention calls F.multi_head_attention_forward, which dynamo keeps as one call;
    # its scaled_dot_product_attention is the sdpa math path in fp16 (torch's upcasts to fp32).
    from torch_spyre._compile import compile_stats

    torch.manual_seed(8)
    mha = torch.nn.MultiheadAttention(128, 4, batch_first=True).eval()
    x = torch.randn(2, 64, 128).half()
    with torch.no_grad():
        want = mha(x.float(), x.float(), x.float(), need_weights=need_weights)[0]
        mha = mha.half().to("spyre")
        torch._dynamo.reset()
        fn = torch.compile(lambda a: mha(a, a, a, need_weights=need_weights)[0], backend="spyre", dynamic=False)
        got = fn(x.to("spyre")).cpu().float()
    assert compile_stats.partitions == 1 and compile_stats.fallback_nodes == 0
    torch.testing.assert_close(got, want, atol=0.1, rtol=0.1)
