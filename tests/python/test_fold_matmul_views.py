"""Matmuls read their batch dims as stored (torch_spyre._fold_matmul_views): linear on a 3-d or
4-d activation and attention's 4-d bmms compile to one matmul kernel, without the flattening
view's copy before it and the view back after it. Results against torch CPU, strict mode."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from torch_spyre._build import compile_stats
from torch_spyre._fold_matmul_views import fold_matmul_views
from torch_spyre.testing import cached_randn

aten = torch.ops.aten


def _kernel_ops() -> list[str]:
    ops = []
    for text in compile_stats.last.superdscs():
        (_, body), = json.loads(text).items()
        ops.append(next(iter(body["dscs_"][0])))
    return ops


def _compiled(fn, *args, monkeypatch) -> torch.Tensor:
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args]).cpu()


@pytest.mark.parametrize("x_shape", [(1, 64, 256), (2, 33, 128), (2, 3, 16, 64)])
def test_linear_on_batched_activations_is_one_matmul(x_shape, monkeypatch):
    x = cached_randn(x_shape, key=f"fmv-x{x_shape}")
    w = cached_randn((x_shape[-1], 96), key=f"fmv-w{x_shape}", scale=0.1)
    got = _compiled(torch.matmul, x, w, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), x.float() @ w.float(), atol=0.1, rtol=0.1)
    assert _kernel_ops() == ["batchmatmul"]


def test_nn_linear_reads_the_activation_as_stored(monkeypatch):
    x = cached_randn((1, 64, 256), key="fmv-lin-x")
    w = cached_randn((128, 256), key="fmv-lin-w", scale=0.1)
    got = _compiled(lambda x, w: F.linear(x, w), x, w, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), F.linear(x.float(), w.float()), atol=0.1, rtol=0.1)
    assert "reshape" not in _kernel_ops() and _kernel_ops().count("batchmatmul") == 1


def test_attention_bmms_keep_their_four_dims(monkeypatch):
    q, k = cached_randn((1, 4, 64, 64), key="fmv-q"), cached_randn((1, 4, 64, 64), key="fmv-k")
    v = cached_randn((1, 4, 64, 64), key="fmv-v")
    fn = lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) * 0.125, -1) @ v  # noqa: E731
    got = _compiled(fn, q, k, v, monkeypatch=monkeypatch)
    torch.testing.assert_close(got.float(), fn(q.float(), k.float(), v.float()), atol=0.1, rtol=0.1)
    ops = _kernel_ops()
    assert ops.count("batchmatmul") == 2 and "reshape" not in ops


def _aten_graph(fn, *args) -> torch.fx.GraphModule:
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx(fn, tracing_mode="fake")(*args)


def test_the_rewrite_itself():
    x, w = torch.randn(2, 5, 8), torch.randn(8, 3)
    gm = _aten_graph(torch.matmul, x, w)
    assert any(n.target is aten.mm.default for n in gm.graph.nodes)
    assert fold_matmul_views(gm) == 1
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [aten.matmul.default]
    assert torch.equal(gm(x, w), torch.matmul(x, w))


def test_views_that_are_not_a_flatten_stay():
    # [4, 6] viewed as [8, 3]: not a merge of leading dims of a rank-3/4 tensor.
    a, w = torch.randn(4, 6), torch.randn(3, 5)
    gm = _aten_graph(lambda a, w: (a.view(8, 3) @ w).view(2, 4, 5), a, w)
    assert fold_matmul_views(gm) == 0
    # Only part of the leading dims merged (the view keeps a batch dim): left as is.
    x, y = torch.randn(2, 3, 4, 5), torch.randn(6, 5, 7)
    gm = _aten_graph(lambda x, y: torch.bmm(x.view(6, 4, 5), y).view(2, 3, 4, 7), x, y)
    assert fold_matmul_views(gm) == 0
