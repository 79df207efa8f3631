"""Layout propagation: reductions without keepdim feeding other ops compile and run on spyre
(pointwise ops run in their keepdim layout, an unsqueeze reads it directly, other ops get a
restickify) instead of falling back to the CPU; transposes feeding pointwise ops are relabels."""

from __future__ import annotations

import warnings

import pytest
import torch

import torch_spyre
from torch_spyre._compile import compile_stats


def _run_on_spyre(fn, *xs: torch.Tensor) -> torch.Tensor:
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch_spyre.FallbackWarning)
        out = torch.compile(fn, backend="spyre")(*(x.to("spyre") for x in xs))
    assert compile_stats.partitions == 1 and compile_stats.fallback_nodes == 0
    return out


@pytest.mark.parametrize("fn", [
    lambda a: a - a.sum(-1).unsqueeze(-1),
    lambda a: a - a.mean(-1).unsqueeze(-1),
    lambda a: a.amax(-1) * 2,
    lambda a: a.sum(-1) * 2,
    lambda a: torch.exp(a.mean(-1)) + a.amax(-1),
    lambda a: (a - a.amax(-1).unsqueeze(-1), a.amax(-1) * 2, a.amax(-1)),
], ids=["x_minus_sum", "x_minus_mean", "amax_times_2", "sum_times_2", "exp_mean_plus_amax", "shared_and_output"])
@pytest.mark.parametrize("shape", [(67, 129), (8, 64), (3, 5, 130)])
def test_non_keepdim_reduction_feeding_ops(fn, shape):
    torch.manual_seed(7)
    x = torch.randn(shape, dtype=torch.float16)
    out = _run_on_spyre(fn, x)
    expect = fn(x)
    if isinstance(expect, tuple):
        for o, e in zip(out, expect):
            torch.testing.assert_close(o.cpu(), e, atol=0.1, rtol=0.1)
    else:
        torch.testing.assert_close(out.cpu(), expect, atol=0.1, rtol=0.1)


def _kernels(name: str) -> int:
    return sum(f'"opFuncName": "{name}"' in s for s in compile_stats.last.superdscs())


def test_pointwise_ops_run_in_the_reduction_layout():
    # amax(-1) * 2 runs the mul on the reduction's keepdim layout: no restickify.
    x = torch.randn(67, 129, dtype=torch.float16)
    out = _run_on_spyre(lambda a: a.amax(-1) * 2, x)
    torch.testing.assert_close(out.cpu(), x.amax(-1) * 2, atol=0.1, rtol=0.1)
    assert _kernels("transpose") == 0 and len(compile_stats.last.superdscs()) == 2


def test_restickify_kernel_is_in_the_compiled_graph():
    # A matmul reads the generic layout only: the reduction is restickified once, before it.
    torch.manual_seed(9)
    x, w = torch.randn(64, 129, dtype=torch.float16), torch.randn(64, 32, dtype=torch.float16)
    out = _run_on_spyre(lambda a, b: a.amax(-1).unsqueeze(0) @ b, x, w)
    torch.testing.assert_close(out.cpu(), x.amax(-1).unsqueeze(0) @ w, atol=0.1, rtol=0.1)
    assert _kernels("transpose") == 1


@pytest.mark.parametrize("fn", [
    lambda a: torch.exp(a.sum(-1) * 0.1),
    lambda a: a.amax(-1) - a.mean(-1),
    lambda a: (a - a.amax(-1).unsqueeze(-1)).exp().sum(-1) + 1,
], ids=["exp_sum", "amax_minus_mean", "logsumexp_like"])
def test_fp32_stick_reduction_feeding_ops(fn):
    # Moving an fp32 value across sticks needs the PE array (fp16/bf16 only), so these were
    # Unsupported when every consumer read the generic layout; they run in the keepdim layout.
    torch.manual_seed(10)
    x = torch.randn(67, 129, dtype=torch.float32)
    torch.testing.assert_close(_run_on_spyre(fn, x).cpu(), fn(x), atol=0.1, rtol=0.1)


def test_fp32_stick_reduction_into_a_generic_only_op_is_unsupported(monkeypatch):
    # cat reads the generic layout only, and no layout avoids moving fp32 values across sticks.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()
    x = torch.randn(8, 64, dtype=torch.float32)
    with pytest.raises(Exception, match="fp16/bf16 only"):
        torch.compile(lambda a: torch.cat([a.sum(-1).exp(), a.sum(-1)]), backend="spyre")(x.to("spyre"))


@pytest.mark.parametrize("fn", [
    lambda a, b: (a.t().relu() + b.t()).t(),
    lambda a, b: torch.sigmoid(a.transpose(0, 1)) * b.transpose(0, 1),
    lambda a, b: (a.t() * 2).sum(-1) + b.t().amax(-1),
], ids=["chain_back", "transposed_output", "transposed_reduction"])
def test_transposed_inputs_pointwise_chain(fn):
    # The transposes are relabels: every op runs in the transposed layout, no stick moves.
    torch.manual_seed(11)
    x, y = torch.randn(64, 200, dtype=torch.float16), torch.randn(64, 200, dtype=torch.float16)
    torch.testing.assert_close(_run_on_spyre(fn, x, y).cpu(), fn(x, y), atol=0.1, rtol=0.1)
    assert _kernels("transpose") == 0 and _kernels("ReStickifyOpHBM") == 0


@pytest.mark.parametrize("fn,kernels", [
    (lambda a: torch.softmax(a, -1), 1),  # amax, sub, exp, sum, div: one row-fused kernel
    (lambda a: torch.nn.functional.layer_norm(a, (a.shape[-1],)), 1),  # exx2, scale, norm: row-fused
], ids=["softmax", "layernorm"])
def test_softmax_and_layernorm_kernel_counts(fn, kernels):
    # The same kernels as before the layout search (no restickify added), with fusion.
    torch.manual_seed(12)
    x = torch.randn(67, 129, dtype=torch.float16)
    torch.testing.assert_close(_run_on_spyre(fn, x).cpu(), fn(x), atol=0.1, rtol=0.1)
    assert len(compile_stats.last.superdscs()) == kernels


def test_reduction_over_two_dims_feeding_an_op():
    torch.manual_seed(8)
    x = torch.randn(3, 5, 130, dtype=torch.float16)
    out = _run_on_spyre(lambda a: a.sum([1, 2]) * 0.5 + 1, x)
    torch.testing.assert_close(out.cpu(), x.sum([1, 2]) * 0.5 + 1, atol=0.1, rtol=0.1)
